"""novelty-audit: reproducible, auditable evaluation of research-novelty judges."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("novelty-audit")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"

__all__ = ["__version__"]
