"""The client wheel as built from python-client/: its name, its version (the repository's
VERSION, through the symlink), its typing marker, its command, its one dependency."""
import email
import os
import subprocess
import sys
import zipfile

from tests.worker import ROOT

VERSION = (ROOT / "VERSION").read_text().strip()


def metadata(built) -> email.message.Message:
    with zipfile.ZipFile(built.wheel) as wheel:
        [name] = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        return email.message_from_bytes(wheel.read(name))


def wheel_text(built, suffix: str) -> str:
    with zipfile.ZipFile(built.wheel) as wheel:
        [name] = [n for n in wheel.namelist() if n.endswith(suffix)]
        return wheel.read(name).decode()


class ClientWheelTests:
    def test_it_takes_its_version_from_the_repositorys_version_file(self, client_package):
        assert os.readlink(ROOT / "python-client" / "VERSION") == "../VERSION"
        assert VERSION == "2.0.0"
        assert client_package.wheel.name == (
            f"serviceorchestration_client-{VERSION}-py3-none-any.whl")
        fields = metadata(client_package)
        assert (fields["Name"], fields["Version"]) == ("serviceorchestration-client", VERSION)
        assert fields["License-Expression"] == "EPL-2.0"
        assert fields["Requires-Python"] == ">=3.11"

    def test_it_depends_on_paho_mqtt_only(self, client_package):
        assert metadata(client_package).get_all("Requires-Dist") == ["paho-mqtt<3,>=2.0"]
        # the service's pin is inside the range
        assert "paho-mqtt==2.2.0\n" in (ROOT / "requirements.txt").read_text()
        imported = subprocess.run(
            [sys.executable, "-c", "import sys, sorch, sorch.cli, sorch.listener; "
             "print(sorted({m.split('.')[0] for m in sys.modules} & {'django', 'rest_framework', "
             "'celery', 'config'}), sorch.__file__)"],
            capture_output=True, text=True, env=client_package.environment(), cwd="/")
        assert imported.returncode == 0, imported.stderr
        assert imported.stdout == f"[] {client_package.site}/sorch/__init__.py\n"

    def test_it_is_typed_and_holds_only_its_package(self, client_package):
        with zipfile.ZipFile(client_package.wheel) as wheel:
            files = {name for name in wheel.namelist() if ".dist-info/" not in name}
        assert "sorch/py.typed" in files
        assert {name.split("/")[0] for name in files} == {"sorch"}
        assert {"sorch/cli.py", "sorch/errors.py", "sorch/listener.py",
                "sorch/orchestrator.py"} <= files
        assert wheel_text(client_package, "top_level.txt") == "sorch\n"

    def test_it_installs_the_sorch_command(self, client_package):
        assert "[console_scripts]\nsorch = sorch.cli:main\n" in wheel_text(
            client_package, "entry_points.txt")
        answer = client_package.run("--version")
        assert (answer.returncode, answer.stdout, answer.stderr) == (0, f"sorch {VERSION}\n", "")
        module = subprocess.run([sys.executable, "-m", "sorch", "--version"], cwd="/",
                                capture_output=True, text=True,
                                env=client_package.environment())
        assert (module.returncode, module.stdout) == (0, f"sorch {VERSION}\n")

    def test_the_package_reports_its_version(self, client_package):
        sorch = client_package.module()
        assert sorch.__version__ == VERSION
        assert {"Orchestrator", "PushListener", "ServiceError", "ClientError"} <= set(
            sorch.__all__)
