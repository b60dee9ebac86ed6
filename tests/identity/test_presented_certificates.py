"""Certificates presented in a message (the MQTT interface's certificate policy): what is read,
and what is refused (expired, not from our CA, a forged issuer, a broken chain, no key)."""
import base64
from datetime import datetime, timedelta, timezone

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from identity.certificates import certificate_identity
from identity.presented_certificates import (INVALID_KEY, MAX_CERTIFICATES, NO_KEY,
                                             PresentedCertificateError, presented_certificate)

pytestmark = pytest.mark.django_db  # the warnings go to the log table

NOW = datetime(2026, 11, 25, 12, tzinfo=timezone.utc)
CLOUD = "TestCloud.Company.arrowhead.eu"


class Issued:
    """A certificate and its key."""

    def __init__(self, name: str, profile: str, issuer: "Issued | None" = None, *,
                 ca: bool = False, starts: datetime = NOW - timedelta(days=1),
                 ends: datetime = NOW + timedelta(days=1)) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name),
                                  x509.NameAttribute(NameOID.DN_QUALIFIER, profile)])
        signer = issuer or self
        self.certificate = (
            x509.CertificateBuilder().subject_name(self.subject)
            .issuer_name(signer.subject).public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(starts).not_valid_after(ends)
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            .sign(signer.key, hashes.SHA256()))

    def pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)


def presented(*chain: Issued) -> str:
    return base64.b64encode(b"".join(issued.pem() for issued in chain)).decode()


@pytest.fixture
def root():
    return Issued(CLOUD, "lo", ca=True)


@pytest.fixture
def ca_file(tmp_path, root):
    path = tmp_path / "ca.pem"
    path.write_bytes(root.pem())
    return str(path)


def identity_of(authentication: str, ca_file: str):
    return certificate_identity(presented_certificate(authentication, ca_file, NOW))


def test_a_certificate_of_our_ca_identifies_its_system(root, ca_file):
    identity = identity_of(presented(Issued(f"ConsumerA.{CLOUD}", "sy", root)), ca_file)
    assert (identity.system_name, identity.cloud, identity.profile) == \
        ("ConsumerA", "TestCloud|Company", "SYSTEM")


def test_the_pem_body_without_its_armour_is_read_as_the_reference_reads_it(root, ca_file):
    pem = Issued(f"Sysop.{CLOUD}", "op", root).pem().decode()
    body = "".join(line for line in pem.splitlines() if not line.startswith("-----"))
    identity = identity_of(base64.b64encode(body.encode()).decode(), ca_file)
    assert (identity.system_name, identity.profile) == ("Sysop", "OPERATOR")


def test_a_chain_through_a_presented_intermediate_leads_to_our_ca(root, ca_file):
    intermediate = Issued(f"Sub.{CLOUD}", "lo", root, ca=True)
    leaf = Issued(f"ConsumerA.{CLOUD}", "sy", intermediate)
    assert identity_of(presented(leaf, intermediate), ca_file).system_name == "ConsumerA"
    with pytest.raises(PresentedCertificateError, match=INVALID_KEY):  # intermediate missing
        presented_certificate(presented(leaf), ca_file, NOW)


def test_an_intermediate_that_is_no_ca_signs_nothing(root, ca_file):
    not_a_ca = Issued(f"Other.{CLOUD}", "sy", root)
    leaf = Issued(f"ConsumerA.{CLOUD}", "sy", not_a_ca)
    with pytest.raises(PresentedCertificateError, match=INVALID_KEY):
        presented_certificate(presented(leaf, not_a_ca), ca_file, NOW)


@pytest.mark.parametrize("starts, ends", [
    (NOW - timedelta(days=10), NOW - timedelta(seconds=1)),   # expired
    (NOW + timedelta(seconds=1), NOW + timedelta(days=10)),   # not yet valid
])
def test_a_certificate_outside_its_validity_is_refused(root, ca_file, starts, ends):
    leaf = Issued(f"ConsumerA.{CLOUD}", "sy", root, starts=starts, ends=ends)
    with pytest.raises(PresentedCertificateError, match=INVALID_KEY):
        presented_certificate(presented(leaf), ca_file, NOW)


def test_a_ca_that_only_shares_our_cas_name_is_not_ours(ca_file):
    forger = Issued(CLOUD, "lo", ca=True)  # same subject, another key
    with pytest.raises(PresentedCertificateError, match=INVALID_KEY):
        presented_certificate(presented(Issued(f"ConsumerA.{CLOUD}", "sy", forger), forger),
                              ca_file, NOW)


def test_a_ca_file_replaced_on_disk_is_read_again(tmp_path, root, ca_file):
    rotated = Issued(CLOUD, "lo", ca=True)
    leaf = presented(Issued(f"ConsumerA.{CLOUD}", "sy", rotated))
    with pytest.raises(PresentedCertificateError):
        presented_certificate(leaf, ca_file, NOW)
    with open(ca_file, "ab") as bundle:  # a second CA added to the bundle
        bundle.write(rotated.pem())
    assert identity_of(leaf, ca_file).system_name == "ConsumerA"


@pytest.mark.parametrize("authentication", [None, ""])
def test_no_key(authentication, ca_file):
    with pytest.raises(PresentedCertificateError, match=f"^{NO_KEY}$"):
        presented_certificate(authentication, ca_file, NOW)


@pytest.mark.parametrize("authentication", [
    "not base64!", "SYSTEM//ConsumerA", base64.b64encode(b"hello").decode(),
    base64.b64encode(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----").decode(),
    base64.b64encode(b"\xff" * 64).decode(), "\u00e9\u00e9",
])
def test_anything_else_is_an_invalid_key(authentication, ca_file):
    with pytest.raises(PresentedCertificateError, match=f"^{INVALID_KEY}$"):
        presented_certificate(authentication, ca_file, NOW)


def test_a_chain_longer_than_any_cloud_needs_is_refused(root, ca_file):
    leaf = Issued(f"ConsumerA.{CLOUD}", "sy", root)
    with pytest.raises(PresentedCertificateError, match=INVALID_KEY):
        presented_certificate(presented(*[leaf] * (MAX_CERTIFICATES + 1)), ca_file, NOW)


def test_an_unreadable_ca_file_trusts_nothing(tmp_path, root):
    with pytest.raises(PresentedCertificateError, match=INVALID_KEY):
        presented_certificate(presented(Issued(f"ConsumerA.{CLOUD}", "sy", root)),
                              str(tmp_path / "missing.pem"), NOW)
