"""What every `memflow` sub-command stands on: where the data lives, Django set up
on demand, the error that is a sentence for the terminal, and `say`."""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path
from typing import Any


class CommandError(Exception):
    """A plain sentence for the person at the terminal; exit status 1."""


def data_dir() -> Path:
    return Path(os.environ.get("MEMFLOW_DATA_DIR") or ".memflow").resolve()


def _ensure_secret_key(directory: Path) -> None:
    """Sessions must survive restarts, so the first run writes a secret key."""
    if os.environ.get("MEMFLOW_SECRET_KEY") or os.environ.get("MEMFLOW_SECRET_KEY_FILE"):
        return
    path = directory / "secret_key"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_urlsafe(50))


def write_private(path: Path, data: bytes) -> None:
    """`data` at `path`, readable by its owner only (0600), whole or not at all.

    Written to `PATH.partial` (created 0600, so there is never a moment it is
    readable by others, whatever the umask) and renamed over `path`: an
    export holds private entries and a USER document.
    """
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def setup_django() -> None:
    directory = data_dir()
    directory.mkdir(parents=True, exist_ok=True)
    _ensure_secret_key(directory)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memflow_site.settings")
    import django

    django.setup()


def say(*parts: Any) -> None:
    print(*parts, file=sys.stderr, flush=True)


# --- migrate -----------------------------------------------------------------


def migrate(verbosity: int = 1) -> None:
    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=verbosity)
    call_command("createcachetable", verbosity=0)
