"""The harness's skills folder: `SKILL.md` files and the tar.gz that carries them.

Claude Code and dsh's skill filesystem read `<name>/SKILL.md`: YAML front
matter with `name` and `description` (plus optional keys such as
`allowed-tools`), then the Markdown body. dsh also reads a flat
`<name>.md`. Pure functions, no database: `services.skills_import` and the
export view call them.
"""

from __future__ import annotations

import io
import posixpath
import re
import tarfile
from dataclasses import dataclass, field
from typing import Any

import yaml

# Bounds on an uploaded archive, checked before and while reading it.
MAX_ARCHIVE_BYTES = 20 * 1024 * 1024
MAX_MEMBERS = 2_000
MAX_FILE_BYTES = 512 * 1024

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*\r?\n?", re.DOTALL | re.MULTILINE)


class FolderError(ValueError):
    """The archive or a file in it cannot be read as a skills folder."""


@dataclass(frozen=True)
class SkillFile:
    name: str
    description: str
    body: str
    metadata: dict[str, Any] = field(default_factory=dict)
    path: str = ""  # where it was found in an archive


def skill_md_render(*, name: str, description: str, body: str, metadata: dict[str, Any]) -> str:
    """A SKILL.md: front matter (name, description, then the other keys), a blank line, the body."""
    front = {"name": name, "description": description, **metadata}
    text = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=10_000)
    return f"---\n{text}---\n\n{body.strip()}\n"


def skill_md_parse(text: str, *, fallback_name: str = "") -> SkillFile:
    """A SKILL.md (or dsh `<name>.md`) read back. The name comes from the front
    matter, else from `fallback_name` (the folder or file name)."""
    text = text.lstrip("\ufeff")
    match = _FRONT_MATTER.match(text)
    front: Any = {}
    body = text
    if match:
        try:
            front = yaml.safe_load(match.group(1)) or {}
        except yaml.YAMLError as exc:
            raise FolderError(f"the front matter is not YAML: {exc}") from None
        if not isinstance(front, dict):
            raise FolderError("the front matter is not a mapping")
        body = text[match.end() :]
    name = front.pop("name", None) or fallback_name
    description = front.pop("description", None)
    if not isinstance(name, str) or not name.strip():
        raise FolderError("no name: neither front matter `name` nor a folder name")
    if not isinstance(description, str) or not description.strip():
        raise FolderError(f"{name}: no `description` in the front matter")
    metadata = {str(k): v for k, v in front.items()}
    return SkillFile(
        name=name.strip(),
        description=" ".join(description.split()),
        body=body.strip(),
        metadata=metadata,
    )


def archive_build(files: list[SkillFile]) -> bytes:
    """A tar.gz of `<name>/SKILL.md` entries, byte-identical for identical skills."""
    buffer = io.BytesIO()
    # mtime 0 and fixed owners: the same skills give the same archive.
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as archive:
        for item in sorted(files, key=lambda f: f.name):
            data = skill_md_render(
                name=item.name, description=item.description, body=item.body, metadata=item.metadata
            ).encode()
            folder = tarfile.TarInfo(item.name)
            folder.type, folder.mode, folder.mtime = tarfile.DIRTYPE, 0o755, 0
            archive.addfile(folder)
            entry = tarfile.TarInfo(f"{item.name}/SKILL.md")
            entry.size, entry.mode, entry.mtime = len(data), 0o644, 0
            archive.addfile(entry, io.BytesIO(data))
    return _zero_gzip_mtime(buffer.getvalue())


def _zero_gzip_mtime(data: bytes) -> bytes:
    # tarfile stamps the gzip header with the current time; bytes 4-8 hold it.
    return data[:4] + b"\0\0\0\0" + data[8:]


@dataclass
class ReadResult:
    files: list[SkillFile] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)  # {"path", "reason"}


def archive_read(data: bytes) -> ReadResult:
    """The skills in a tar(.gz) of a skills folder.

    `<any/prefix/><name>/SKILL.md` and dsh's flat `<any/prefix/><name>.md` are
    read; other files (scripts, references, READMEs beside a SKILL.md) are
    listed as skipped. Links, devices and oversize files are never read.
    """
    if len(data) > MAX_ARCHIVE_BYTES:
        raise FolderError(f"the archive is over {MAX_ARCHIVE_BYTES // (1024 * 1024)} MB")
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")  # noqa: SIM115 (closed below)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise FolderError(f"not a tar or tar.gz archive: {exc}") from None
    result = ReadResult()
    skill_dirs: set[str] = set()
    with archive:
        try:
            members = []
            for count, member in enumerate(archive, start=1):
                if count > MAX_MEMBERS:
                    raise FolderError(f"the archive has more than {MAX_MEMBERS} entries")
                members.append(member)
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise FolderError(f"the archive is damaged: {exc}") from None
        for member in members:
            path = posixpath.normpath(member.name.lstrip("/"))
            if member.isfile() and posixpath.basename(path) == "SKILL.md":
                skill_dirs.add(posixpath.dirname(path))
        for member in members:
            path = posixpath.normpath(member.name.lstrip("/"))
            if member.isdir() or path in (".", ""):
                continue
            parent, base = posixpath.dirname(path), posixpath.basename(path)
            if base == "SKILL.md":
                fallback = posixpath.basename(parent)
            elif (
                base.endswith(".md") and parent not in skill_dirs and not _inside(path, skill_dirs)
            ):
                fallback = base[: -len(".md")]
            else:
                result.skipped.append({"path": path, "reason": "not a skill file"})
                continue
            if not member.isfile():
                result.skipped.append({"path": path, "reason": "not a regular file"})
                continue
            if member.size > MAX_FILE_BYTES:
                result.skipped.append({"path": path, "reason": "too large"})
                continue
            raw = archive.extractfile(member)
            if raw is None:
                result.skipped.append({"path": path, "reason": "unreadable"})
                continue
            try:
                text = raw.read().decode("utf-8")
                parsed = skill_md_parse(text, fallback_name=fallback)
            except UnicodeDecodeError:
                result.skipped.append({"path": path, "reason": "not UTF-8 text"})
                continue
            except FolderError as exc:
                result.skipped.append({"path": path, "reason": str(exc)})
                continue
            result.files.append(
                SkillFile(
                    name=parsed.name,
                    description=parsed.description,
                    body=parsed.body,
                    metadata=parsed.metadata,
                    path=path,
                )
            )
    return result


def _inside(path: str, folders: set[str]) -> bool:
    """Whether `path` lies in one of the skill folders (a supporting file, not a skill)."""
    return any(folder and path.startswith(folder + "/") for folder in folders)
