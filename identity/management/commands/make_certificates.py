"""Test certificates in the Arrowhead form, made with the openssl command line tool."""
import subprocess
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from identity.certificates import ARROWHEAD_DOMAIN, PROFILES

EXTENSIONS = """basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:localhost, IP:127.0.0.1, IP:::1
"""


class Command(BaseCommand):
    help = ("Create a test certificate authority and certificates for this service and for "
            "client systems, with CN `<system>.<cloud>.<organization>.arrowhead.eu` and the "
            "Arrowhead profile in the DN qualifier. For tests and trials, not production.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory")
        parser.add_argument("--cloud", default="TestCloud")
        parser.add_argument("--organization", default="Company")
        parser.add_argument("--server", default="SimpleStoreServiceOrchestration",
                            help="this service's system name (server certificate)")
        parser.add_argument("--system", action="append", default=[], metavar="NAME[:PROFILE]",
                            help="a client certificate; profile code sy (default), op, de, …; "
                            "repeatable")
        parser.add_argument("--ca-name", default="ca", help="file name stem of the CA")
        parser.add_argument("--days", type=int, default=365)

    def handle(self, *args, **options) -> None:
        directory = Path(options["directory"])
        directory.mkdir(parents=True, exist_ok=True)
        suffix = f"{options['cloud']}.{options['organization']}.{ARROWHEAD_DOMAIN}"
        ca = directory / options["ca_name"]
        if not ca.with_suffix(".pem").exists():
            self._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt",
                          "ec_paramgen_curve:prime256v1", "-nodes", "-days", str(options["days"]),
                          "-keyout", f"{ca}.key", "-out", f"{ca}.pem",
                          "-subj", f"/CN={suffix}/dnQualifier=lo",
                          "-addext", "basicConstraints=critical,CA:TRUE",
                          "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        leaves = [(options["server"], "sy"), *map(self._name_and_profile, options["system"])]
        for name, profile in leaves:
            self._leaf(directory / name, f"{name}.{suffix}", profile, ca, options["days"])
        self.stdout.write(f"CA {ca}.pem; certificates: "
                          + ", ".join(f"{name}.pem ({PROFILES[p]})" for name, p in leaves))

    def _name_and_profile(self, value: str) -> tuple[str, str]:
        name, _, profile = value.partition(":")
        profile = (profile or "sy").lower()
        if not name or profile not in PROFILES:
            raise CommandError(f"--system {value}: expected NAME[:PROFILE], profile one of "
                               f"{', '.join(PROFILES)}")
        return name, profile

    def _leaf(self, stem: Path, common_name: str, profile: str, ca: Path, days: int) -> None:
        with tempfile.TemporaryDirectory() as work:
            csr, extensions = Path(work) / "leaf.csr", Path(work) / "leaf.ext"
            extensions.write_text(EXTENSIONS)
            self._openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                          "-nodes", "-keyout", f"{stem}.key", "-out", str(csr),
                          "-subj", f"/CN={common_name}/dnQualifier={profile}")
            self._openssl("x509", "-req", "-in", str(csr), "-CA", f"{ca}.pem", "-CAkey",
                          f"{ca}.key", "-CAcreateserial", "-days", str(days),
                          "-extfile", str(extensions), "-out", f"{stem}.pem")

    def _openssl(self, *arguments: str) -> None:
        try:
            subprocess.run(["openssl", *arguments], check=True, capture_output=True, text=True)
        except FileNotFoundError as exc:
            raise CommandError("The openssl command line tool is needed") from exc
        except subprocess.CalledProcessError as exc:
            raise CommandError(f"openssl {arguments[0]} failed: {exc.stderr.strip()}") from exc
