"""The release number, as the installed distribution records it (the repository's VERSION)."""
from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "serviceorchestration-client"

try:
    __version__ = version(DISTRIBUTION)
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"
