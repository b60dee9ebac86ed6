"""Certificates presented inside a message instead of in a TLS handshake: the MQTT interface's
certificate policy (issue 16). As the reference's MQTT certificate filter reads it, the
request's `authentication` field is the Base64 encoding of the requester's PEM certificate.

The reference only parses that certificate. Here it must also be one our CA vouches for: it is
valid now and chains, through CA certificates presented after it, to a certificate of
TLS_CA_FILE. A certificate is public, so this proves membership of the local cloud, not that
the sender holds the key: the broker, which authenticated the client's own TLS certificate,
decides who may publish on the request topics (docs/mqtt-api.md). The result has the shape
Python's ssl module gives a verified peer certificate, so identity.authentication reads it as
it reads an HTTPS client's."""
import base64
import binascii
import logging
import os
from datetime import datetime, timezone
from functools import lru_cache

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm

from identity.certificates import ssl_decoded

logger = logging.getLogger(__name__)

NO_KEY = "No authentication key has been provided"
INVALID_KEY = "Invalid authentication key has been provided"
MAX_CERTIFICATES = 8  # the leaf and its intermediates; more is not a chain anyone needs


class PresentedCertificateError(Exception):
    """The presented certificate identifies nobody; the message is the reference's 401 text."""


def presented_certificate(authentication: str | None, ca_file: str,
                          now: datetime | None = None) -> dict:
    """The verified certificate of `authentication` as ssl decodes one (its subject), or
    PresentedCertificateError."""
    if not authentication:
        raise PresentedCertificateError(NO_KEY)
    chain = _certificates(authentication)
    now = now or datetime.now(timezone.utc)
    problem = _chain_problem(chain, _anchors(ca_file, *_file_version(ca_file)), now)
    if problem:
        logger.warning("MQTT request refused: certificate %s %s", _common_name(chain[0]),
                       problem)
        raise PresentedCertificateError(INVALID_KEY)
    return ssl_decoded(chain[0])


def _certificates(authentication: str) -> list[x509.Certificate]:
    """Base64 of PEM (one certificate or a chain, leaf first); the PEM body alone, without
    its BEGIN/END lines, is read too, as the reference reads it."""
    try:
        decoded = base64.b64decode("".join(authentication.split()), validate=True)
        if b"-----BEGIN" in decoded:
            chain = x509.load_pem_x509_certificates(decoded)
        else:
            der = base64.b64decode(b"".join(decoded.split()), validate=True)
            chain = [x509.load_der_x509_certificate(der)]
    except (binascii.Error, ValueError, UnsupportedAlgorithm):
        raise PresentedCertificateError(INVALID_KEY) from None
    if not chain or len(chain) > MAX_CERTIFICATES:
        raise PresentedCertificateError(INVALID_KEY)
    return chain


def _chain_problem(chain: list[x509.Certificate], anchors: tuple[x509.Certificate, ...],
                   now: datetime) -> str | None:
    """Why `chain` does not lead to one of `anchors` at `now`, or None when it does."""
    certificate, intermediates = chain[0], chain[1:]
    if not _current(certificate, now):
        return "is expired or not yet valid"
    for _ in range(len(chain)):
        if any(_current(anchor, now) and _issued_by(certificate, anchor) for anchor in anchors):
            return None
        issuer = next((candidate for candidate in intermediates
                       if _is_ca(candidate) and _current(candidate, now)
                       and _issued_by(certificate, candidate)), None)
        if issuer is None:
            break
        intermediates = [other for other in intermediates if other is not issuer]
        certificate = issuer
    return "is not signed by a certificate authority of TLS_CA_FILE"


def _current(certificate: x509.Certificate, now: datetime) -> bool:
    return certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc


def _issued_by(certificate: x509.Certificate, issuer: x509.Certificate) -> bool:
    try:
        certificate.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature, UnsupportedAlgorithm):
        return False
    return True


def _is_ca(certificate: x509.Certificate) -> bool:
    try:
        return certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except (x509.ExtensionNotFound, ValueError):
        return False


def _common_name(certificate: x509.Certificate) -> str:
    attributes = [value for ((key, value),) in ssl_decoded(certificate)["subject"]
                  if key == "commonName"]
    return attributes[0] if attributes else "(no common name)"


def _file_version(path: str) -> tuple[int, int]:
    """A new TLS_CA_FILE (a rotated CA) is read again, without a restart."""
    try:
        status = os.stat(path)
    except OSError:
        return 0, 0
    return status.st_mtime_ns, status.st_size


@lru_cache(maxsize=2)
def _anchors(path: str, mtime_ns: int, size: int) -> tuple[x509.Certificate, ...]:
    try:
        with open(path, "rb") as ca_file:
            return tuple(x509.load_pem_x509_certificates(ca_file.read()))
    except (OSError, ValueError) as error:
        logger.error("TLS_CA_FILE %r is not readable as PEM certificates: %s", path, error)
        return ()
