"""Where the resolver reads files from: the local disk, or stored documents.

The resolver sees only this interface, so the CLI on an agent's machine and
the server over `ContextDocument` rows run the very same code. Paths are
absolute, normalised POSIX paths; a source never resolves symlinks or `..`
itself (the resolver has normalised them lexically already).
"""

from __future__ import annotations

import bisect
import os
import posixpath
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

# The largest file a context may hold, on disk as on the server: a file this
# size is already far beyond any model's context window.
MAX_FILE_BYTES = 1024 * 1024

NO_SUCH_FILE = "no such file"
BINARY = "a binary file (it holds NUL bytes)"
IS_A_DIRECTORY = "is a directory"
TOO_LARGE = f"larger than {MAX_FILE_BYTES} bytes"


def normalize_path(path: str) -> str:
    """Lexically normalised: no `.`, `..` or repeated slashes, and a single
    leading slash (POSIX lets `//` mean something else; nobody here does)."""
    path = posixpath.normpath(path)
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    return path


class Unreadable(Exception):
    """A path that names no readable file; `reason` is shown in notes."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class FileSource(Protocol):
    def read_text(self, path: str) -> str:
        """The file's text (UTF-8; undecodable bytes replaced), or `Unreadable`."""
        ...

    def is_file(self, path: str) -> bool: ...

    def exists(self, path: str) -> bool:
        """Whether anything — file or directory — is at `path`."""
        ...

    def list_files(self, directory: str) -> list[str]:
        """Names of the regular files directly in `directory`, sorted; [] if none."""
        ...


class DiskSource:
    """The agent's own file system."""

    def read_text(self, path: str) -> str:
        try:
            info = os.stat(path)
            if stat.S_ISDIR(info.st_mode):
                raise Unreadable(IS_A_DIRECTORY)
            if not stat.S_ISREG(info.st_mode):
                raise Unreadable("not a regular file")  # a FIFO would block the read
            if info.st_size > MAX_FILE_BYTES:
                raise Unreadable(TOO_LARGE)
            with open(path, "rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
        except (FileNotFoundError, NotADirectoryError):
            raise Unreadable(NO_SUCH_FILE) from None
        except PermissionError:
            raise Unreadable("permission denied") from None
        except OSError as exc:
            raise Unreadable(exc.strerror or type(exc).__name__) from None
        if len(data) > MAX_FILE_BYTES:
            raise Unreadable(TOO_LARGE)
        if b"\x00" in data:
            raise Unreadable(BINARY)
        return data.decode("utf-8", "replace")

    def is_file(self, path: str) -> bool:
        try:
            return Path(path).is_file()
        except OSError:
            return False

    def exists(self, path: str) -> bool:
        try:
            return Path(path).exists()
        except OSError:
            return False

    def list_files(self, directory: str) -> list[str]:
        try:
            entries = list(Path(directory).iterdir())
        except OSError:
            return []
        names = []
        for entry in entries:
            try:
                if entry.is_file():
                    names.append(entry.name)
            except OSError:
                continue
        return sorted(names)


class StoredSource:
    """Documents held as a mapping of absolute path to text (the server's rows).

    A directory exists when some document lies below it; a path that is
    both a document and a directory prefix reads as the document.
    """

    def __init__(self, documents: Mapping[str, str]) -> None:
        self.documents = documents
        self._paths = sorted(documents)
        self._directories: set[str] = set()
        for path in self._paths:
            parent = posixpath.dirname(path)
            while parent not in self._directories:
                self._directories.add(parent)
                if parent == "/" or not parent:
                    break
                parent = posixpath.dirname(parent)

    def read_text(self, path: str) -> str:
        if path in self.documents:
            try:
                text = self.documents[path]
            except KeyError:  # gone since the listing (a concurrent delete)
                raise Unreadable(NO_SUCH_FILE) from None
            if len(text.encode("utf-8", "surrogatepass")) > MAX_FILE_BYTES:
                raise Unreadable(TOO_LARGE)
            if "\x00" in text:
                raise Unreadable(BINARY)
            return text
        if path in self._directories:
            raise Unreadable(IS_A_DIRECTORY)
        raise Unreadable(NO_SUCH_FILE)

    def is_file(self, path: str) -> bool:
        return path in self.documents

    def exists(self, path: str) -> bool:
        return path in self.documents or path in self._directories

    def list_files(self, directory: str) -> list[str]:
        prefix = directory.rstrip("/") + "/"
        names = []
        for path in self._paths[bisect.bisect_left(self._paths, prefix) :]:
            if not path.startswith(prefix):
                break
            if "/" not in path[len(prefix) :]:
                names.append(path[len(prefix) :])
        return names
