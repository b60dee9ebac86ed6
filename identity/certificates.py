"""Arrowhead certificate identities (reference-simple §2.2): the subject CN is
`<system>.<cloud>.<organization>.<x>.<y>` (e.g. `ConsumerA.TestCloud.Company.arrowhead.eu`) and
the DN qualifier (OID 2.5.4.46) holds the profile code."""
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote

from cryptography import x509
from cryptography.x509.oid import NameOID

from conventions import names

PROFILES = {"ma": "MASTER", "ga": "GATE", "or": "ORGANIZATION", "lo": "LOCAL_CLOUD",
            "on": "ON_BOARDING", "de": "DEVICE", "sy": "SYSTEM", "op": "OPERATOR"}
ARROWHEAD_DOMAIN = "arrowhead.eu"
# The WSGI environ key under which the MQTT interface's front door passes the verified
# certificate of a request.
CLIENT_CERT_ENVIRON_KEY = "arrowhead.client_certificate"
# nginx (deploy/nginx.conf) passes the verified TLS client certificate, URL-escaped PEM, in
# this header, which it always sets itself: a client's own never passes. gunicorn listens on
# this machine only (identity/exposure.py), so nobody else can send it.
CLIENT_CERT_HEADER_KEY = "HTTP_X_CLIENT_CERTIFICATE"


@dataclass(frozen=True)
class CertificateIdentity:
    system_name: str      # first CN label, normalized
    cloud: str            # `<Cloud>|<Organization>`, normalized
    profile: str          # SYSTEM, OPERATOR, DEVICE, …


def request_certificate(meta: dict) -> dict | None:
    """The verified client certificate of a request, decoded as Python's ssl module decodes a
    peer certificate (its subject), or None."""
    if CLIENT_CERT_ENVIRON_KEY in meta:
        return meta[CLIENT_CERT_ENVIRON_KEY]
    pem = meta.get(CLIENT_CERT_HEADER_KEY)
    return ssl_decoded(x509.load_pem_x509_certificate(unquote(pem).encode())) if pem else None


def ssl_decoded(certificate: x509.Certificate) -> dict:
    """The attributes read here, named and shaped as the ssl module gives them."""
    keys = {NameOID.COMMON_NAME: "commonName", NameOID.DN_QUALIFIER: "dnQualifier"}
    return {"subject": tuple(((keys[attribute.oid], str(attribute.value)),)
                             for attribute in certificate.subject if attribute.oid in keys)}


def certificate_identity(certificate: dict | None) -> CertificateIdentity | None:
    """The identity of a decoded, verified certificate; None when it is not an Arrowhead
    certificate (CN not of five labels, or no known profile)."""
    if not certificate:
        return None
    subject = {key: value for rdn in certificate.get("subject", ()) for key, value in rdn}
    labels = subject.get("commonName", "").split(".")
    profile = PROFILES.get(subject.get("dnQualifier", "").strip().lower())
    if len(labels) != 5 or not all(labels) or profile is None:
        return None
    cloud, organization = (names.normalize_system_name(label) for label in labels[1:3])
    return CertificateIdentity(names.normalize_system_name(labels[0]) or "",
                               f"{cloud}|{organization}", profile)


@lru_cache(maxsize=4)
def server_cloud(certificate_file: str) -> str | None:
    """The cloud of this service's own certificate (TLS_CERT_FILE)."""
    certificate = x509.load_pem_x509_certificate(Path(certificate_file).read_bytes())
    identity = certificate_identity(ssl_decoded(certificate))
    return identity.cloud if identity else None
