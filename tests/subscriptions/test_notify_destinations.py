"""HTTP notify destinations must not reach internal addresses (issue 29, item 2): at subscribe
time an address that is, or a name that resolves to, a loopback, link-local, private or other
non-public address, or one of this service's own, is a 400 naming it and why, unless
NOTIFY_HTTP_ALLOWED_NETWORKS allows its network; this service's own API never. The consumer's
subscribe, push management's and the MQTT interface's
(tests/mqtt_api/test_notify_destinations.py) all go through the same check.

The suite allows loopback (tests/conftest.py); these tests set the networks they need."""
import ipaddress

import pytest

from subscriptions.models import Subscription
from tests.helpers import assert_refused
from tests.subscriptions.helpers import (
    PUSH_SUBSCRIBE,
    SUBSCRIBE,
    push_element,
    push_subscribe,
    stored_subscriptions,
    subscribe,
    subscription_body,
)

pytestmark = pytest.mark.django_db

ORIGIN = f"POST {SUBSCRIBE}"
HINT = "see NOTIFY_HTTP_ALLOWED_NETWORKS"
INVALID_NAME = "Notify property address: Address verification failure: invalid host name: "
PUBLIC = "203.0.114.7"  # a public address (nothing here connects to it)


def http(address: str, port: int = 8080) -> dict:
    return {"protocol": "HTTP", "properties": {"address": address, "port": port,
                                               "method": "POST", "path": "/notify"}}


def networks(*cidrs: str) -> tuple:
    return tuple(ipaddress.ip_network(cidr) for cidr in cidrs)


# (address as sent, the network that allows it, the 400's message without that network)
REFUSED = [
    ("127.0.0.1", "127.0.0.0/8", f"Notify address 127.0.0.1 is a loopback address; {HINT}"),
    ("127.10.0.3", "127.0.0.0/8", f"Notify address 127.10.0.3 is a loopback address; {HINT}"),
    ("::1", "::1/128", f"Notify address ::1 is a loopback address; {HINT}"),
    ("[::1]", "::1/128", f"Notify address ::1 is a loopback address; {HINT}"),
    ("::ffff:127.0.0.1", "127.0.0.0/8",
     f"Notify address ::ffff:7f00:1 is a loopback address; {HINT}"),
    ("0x7f000001", "127.0.0.0/8",
     f"Notify address 0x7f000001 resolves to 127.0.0.1, a loopback address; {HINT}"),
    ("0x7f.1", "127.0.0.0/8",
     f"Notify address 0x7f.1 resolves to 127.0.0.1, a loopback address; {HINT}"),
    # Looks like 12.0.0.1; the system's resolver reads a leading 0 as octal.
    ("012.0.0.1", "10.0.0.0/8",
     f"Notify address 012.0.0.1 resolves to 10.0.0.1, a private address; {HINT}"),
    ("localhost", "127.0.0.0/8,::1/128",
     f"Notify address localhost resolves to 127.0.0.1, a loopback address; {HINT}"),
    ("LocalHost", "127.0.0.0/8,::1/128",
     f"Notify address localhost resolves to 127.0.0.1, a loopback address; {HINT}"),
    ("169.254.169.254", "169.254.0.0/16",
     f"Notify address 169.254.169.254 is a link-local address; {HINT}"),
    ("fe80::1", "fe80::/10", f"Notify address fe80::1 is a link-local address; {HINT}"),
    ("10.1.2.3", "10.0.0.0/8", f"Notify address 10.1.2.3 is a private address; {HINT}"),
    ("172.16.0.1", "172.16.0.0/12", f"Notify address 172.16.0.1 is a private address; {HINT}"),
    ("192.168.1.1", "192.168.0.0/16",
     f"Notify address 192.168.1.1 is a private address; {HINT}"),
    ("fd12:3456::1", "fc00::/7", f"Notify address fd12:3456::1 is a private address; {HINT}"),
    ("::ffff:10.0.0.1", "10.0.0.0/8",
     f"Notify address ::ffff:a00:1 is a private address; {HINT}"),
    ("100.64.0.1", "100.64.0.0/10", f"Notify address 100.64.0.1 is not a public address; {HINT}"),
]


class RefusedAddressTests:
    @pytest.mark.parametrize("address, network, message", REFUSED)
    def test_it_refuses_an_internal_address(self, api, settings, address, network, message):
        settings.NOTIFY_HTTP_ALLOWED_NETWORKS = ()
        assert_refused(lambda: subscribe(api, subscription_body(notify=http(address))),
                       message, ORIGIN, state=stored_subscriptions)

    @pytest.mark.parametrize("address, network, message", REFUSED)
    def test_it_accepts_it_when_its_network_is_allowed(self, api, settings, address, network,
                                                       message):
        settings.NOTIFY_HTTP_ALLOWED_NETWORKS = networks(*network.split(","))
        response = subscribe(api, subscription_body(notify=http(address)))
        assert response.status_code == 201, response.content

    @pytest.mark.parametrize("address, message", [
        # Numeric forms the store's rules do not take for IPv4 nor for host names.
        ("2130706433", f"{INVALID_NAME}2130706433"),
        ("127.1", f"{INVALID_NAME}127.1"),
        ("0177.0.0.1", f"{INVALID_NAME}0177.0.0.1"),
        ("0.0.0.0", "Notify property address: Address verification failure: unspecified "
         "address is not allowed: 0.0.0.0"),
        ("255.255.255.255", "Notify property address: Address verification failure: "
         "broadcast address is not allowed: 255.255.255.255"),
        ("ff02::1", "Notify property address: Address verification failure: multicast address "
         "is not allowed: ff02:0000:0000:0000:0000:0000:0000:0001"),
    ])
    def test_other_forms_stay_refused_even_when_everything_is_allowed(self, api, settings,
                                                                      address, message):
        settings.NOTIFY_HTTP_ALLOWED_NETWORKS = networks("0.0.0.0/0", "::/0")
        assert_refused(lambda: subscribe(api, subscription_body(notify=http(address))),
                       message, ORIGIN, state=stored_subscriptions)

    def test_it_accepts_a_public_address(self, api, settings):
        settings.NOTIFY_HTTP_ALLOWED_NETWORKS = ()
        assert subscribe(api, subscription_body(notify=http(PUBLIC))).status_code == 201


class ResolvedNameTests:
    def test_it_refuses_a_name_one_of_whose_addresses_is_internal(self, api, settings,
                                                                  resolver):
        settings.NOTIFY_HTTP_ALLOWED_NETWORKS = ()
        resolver["hooks.example"] = [PUBLIC, "10.0.0.5"]
        assert_refused(lambda: subscribe(api, subscription_body(notify=http("hooks.example"))),
                       f"Notify address hooks.example resolves to 10.0.0.5, a private address; "
                       f"{HINT}", ORIGIN, state=stored_subscriptions)

    def test_it_accepts_a_name_that_resolves_to_public_addresses(self, api, settings,
                                                                 resolver):
        settings.NOTIFY_HTTP_ALLOWED_NETWORKS = ()
        resolver["hooks.example"] = [PUBLIC, "2001:4860::7"]
        assert subscribe(api, subscription_body(notify=http("hooks.example"))).status_code \
            == 201

    def test_it_accepts_a_name_that_does_not_resolve_yet(self, api, settings):
        """Checked again before every send (tests/notifications/test_destination_policy.py)."""
        settings.NOTIFY_HTTP_ALLOWED_NETWORKS = ()
        assert subscribe(api, subscription_body(notify=http("later.example"))).status_code \
            == 201
        assert Subscription.objects.get().notify_properties["address"] == "later.example"


class OwnAddressTests:
    def test_it_refuses_this_services_own_public_address(self, api, settings, resolver):
        settings.NOTIFY_HTTP_ALLOWED_NETWORKS = ()
        settings.HOST, settings.SERVICE_ADDRESS = "0.0.0.0", "orchestrator.own.example"
        resolver["orchestrator.own.example"] = [PUBLIC]
        assert_refused(lambda: subscribe(api, subscription_body(notify=http(PUBLIC))),
                       f"Notify address {PUBLIC} is one of this service's own addresses; {HINT}",
                       ORIGIN, state=stored_subscriptions)

    @pytest.mark.parametrize("host, address", [
        ("127.0.0.1", "127.0.0.1"),
        ("127.0.0.1", "localhost"),
        ("0.0.0.0", "127.0.0.5"),  # a wildcard HOST listens on every loopback address
        ("::", "::1"),
    ])
    def test_it_refuses_this_services_own_api_even_when_allowed(self, api, settings, host,
                                                                address):
        settings.HOST, settings.SERVICE_ADDRESS, settings.PORT = host, "127.0.0.1", 8465
        settings.NOTIFY_HTTP_ALLOWED_NETWORKS = networks("0.0.0.0/0", "::/0")
        response = subscribe(api, subscription_body(notify=http(address, port=8465)))
        assert response.status_code == 400, response.content
        assert response.json()["errorMessage"].endswith(
            "this service's own address and port 8465 (its own API)")
        assert Subscription.objects.count() == 0


class OtherEntryPointTests:
    def test_push_management_refuses_an_internal_address(self, api, settings):
        settings.NOTIFY_HTTP_ALLOWED_NETWORKS = ()
        element = push_element(notifyInterface=http("169.254.169.254", port=80))
        assert_refused(lambda: push_subscribe(api, element),
                       f"Notify address 169.254.169.254 is a link-local address; {HINT}",
                       f"POST {PUSH_SUBSCRIBE}", state=stored_subscriptions)
