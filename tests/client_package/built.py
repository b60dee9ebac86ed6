"""The client package (python-client/) as a user gets it: a wheel built from a copy of the
repository's files, offline (setuptools of this virtualenv, no build isolation), installed
with pip into a folder of its own. The tests import and run that installation, never the
source tree."""
import importlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from tests.worker import ROOT

SOURCE = ROOT / "python-client"
BUILD_LEFTOVERS = shutil.ignore_patterns("build", "*.egg-info", "__pycache__")


@dataclass(frozen=True)
class BuiltClient:
    wheel: Path
    site: Path  # where pip installed it (`--target`)

    @property
    def script(self) -> Path:
        return self.site / "bin" / "sorch"

    def environment(self) -> dict[str, str]:
        """The environment of a process that imports the installed package."""
        return {**os.environ, "PYTHONPATH": str(self.site)}

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        """The installed `sorch` command."""
        return subprocess.run([str(self.script), *args], capture_output=True, text=True,
                              env=self.environment(), timeout=timeout)

    def module(self) -> ModuleType:
        """The installed `sorch`, imported into this process."""
        if str(self.site) not in sys.path:
            sys.path.insert(0, str(self.site))
        module = importlib.import_module("sorch")
        assert Path(module.__file__).is_relative_to(self.site), module.__file__
        return module


def _pip(*args: str) -> None:
    answer = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check",
                             "--no-input", *args], capture_output=True, text=True, timeout=300)
    assert answer.returncode == 0, f"pip {' '.join(args)}:\n{answer.stdout}{answer.stderr}"


def build_and_install(folder: Path) -> BuiltClient:
    """Build the wheel from a copy of python-client/ beside a copy of VERSION (its symlink
    `VERSION -> ../VERSION` resolves there as in the repository) and install it."""
    checkout = folder / "checkout"
    checkout.mkdir()
    shutil.copy(ROOT / "VERSION", checkout / "VERSION")
    shutil.copytree(SOURCE, checkout / "python-client", symlinks=True, ignore=BUILD_LEFTOVERS)
    _pip("wheel", "--no-deps", "--no-build-isolation", "--no-index", "--wheel-dir",
         str(folder / "dist"), str(checkout / "python-client"))
    [wheel] = (folder / "dist").glob("*.whl")
    _pip("install", "--no-deps", "--no-index", "--target", str(folder / "site"), str(wheel))
    return BuiltClient(wheel=wheel, site=folder / "site")


@pytest.fixture(scope="session")
def client_package(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BuiltClient]:
    """The client wheel, built and installed once per run."""
    built = build_and_install(tmp_path_factory.mktemp("client-package"))
    yield built
    for name in [name for name in sys.modules if name.partition(".")[0] == "sorch"]:
        del sys.modules[name]
