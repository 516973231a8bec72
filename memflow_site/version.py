from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("memflow")
except PackageNotFoundError:  # running from a checkout that was never installed
    __version__ = "0.0.0+checkout"
