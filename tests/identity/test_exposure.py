"""What counts as loopback for the declared policy's refusal (identity/exposure.py; issue
29, item 3): only addresses that never leave this machine. Nothing here connects anywhere."""
import pytest

from identity.exposure import declared_refusal, is_loopback, proxied_refusal


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost",
                                  "::ffff:127.0.0.1"])
def test_loopback_addresses_and_names_are_local(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "10.0.0.5", "192.168.1.2", "169.254.1.1",
                                  "fe80::1", "::ffff:10.0.0.5"])
def test_wildcards_and_other_addresses_are_the_network(host):
    assert not is_loopback(host)


class DeclaredRefusalTests:
    def test_only_declared_on_the_network_without_the_setting_is_refused(self, settings):
        settings.AUTHENTICATION_POLICY, settings.IDENTITY_DECLARED_ON_NETWORK = "declared", False
        assert "AUTHENTICATION_POLICY=declared on the non-loopback address 10.0.0.5:8465 " \
            in declared_refusal("10.0.0.5:8465", "10.0.0.5")
        assert declared_refusal("127.0.0.1:8465", "127.0.0.1") is None
        settings.IDENTITY_DECLARED_ON_NETWORK = True
        assert declared_refusal("10.0.0.5:8465", "10.0.0.5") is None
        settings.AUTHENTICATION_POLICY, settings.IDENTITY_DECLARED_ON_NETWORK = "token", False
        assert declared_refusal("10.0.0.5:8465", "10.0.0.5") is None


def test_gunicorn_behind_nginx_listens_on_this_machine_only():
    """It trusts the client certificate header nginx sets (identity/certificates.py)."""
    assert proxied_refusal("unix:/x/gunicorn.sock", "localhost") is None
    assert proxied_refusal("127.0.0.1:9000", "127.0.0.1") is None
    assert "non-loopback address 0.0.0.0:9000" in proxied_refusal("0.0.0.0:9000", "0.0.0.0")
