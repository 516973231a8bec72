"""The archive's container: its format constants, a tar.gz with fixed headers, its
members read back in memory, its JSON lines."""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import posixpath
import tarfile
import zlib
from typing import Any

from contexts.errors import Invalid
from memflow_site.porting.report import ImportReport

FORMAT = "archive"
ARCHIVE_FORMAT = "memflow-archive"
ARCHIVE_VERSION = 1
MAX_MEMBER_BYTES = 1024 * 1024 * 1024
# Metadata keys whose values are memory ids (the engine writes them).
ID_METADATA_KEYS = ("tombstone_of", "evidence_ids")


def _iso(value: dt.datetime | None) -> str | None:
    return value.astimezone(dt.UTC).isoformat() if value is not None else None


def _json_line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True) + "\n"


def _remap_ids(metadata: dict[str, Any], mapping: dict[int, int]) -> dict[str, Any]:
    """Metadata with its memory-id values translated through `mapping` (unknown: None)."""

    def one(value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return mapping.get(value)
        return value

    out = dict(metadata)
    for key in ID_METADATA_KEYS:
        if key in out:
            value = out[key]
            out[key] = [one(v) for v in value] if isinstance(value, list) else one(value)
    return out


def archive_bytes(members: dict[str, bytes]) -> bytes:
    """A tar.gz with fixed headers: the same members always give the same bytes."""
    buffer = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, compresslevel=6) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as archive,
    ):
        names = sorted(members, key=lambda n: (n != "manifest.json", n))
        for name in names:
            data = members[name]
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def archive_members(data: bytes) -> dict[str, bytes]:
    """The regular files of an archive, by normalised name; nothing touches the disk."""
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")  # noqa: SIM115 (closed below)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise Invalid(f"Not a memflow archive (tar.gz): {exc}", code="unreadable_archive") from None
    members: dict[str, bytes] = {}
    with archive:
        try:
            for member in archive:
                if not member.isfile():
                    continue
                if member.size > MAX_MEMBER_BYTES:
                    raise Invalid(f"{member.name} is over 1 GB.", code="unreadable_archive")
                name = posixpath.normpath(member.name.lstrip("/"))
                handle = archive.extractfile(member)
                if handle is not None:
                    members[name] = handle.read()
        except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
            raise Invalid(f"The archive is damaged: {exc}", code="unreadable_archive") from None
    return members


def _jsonl(
    members: dict[str, bytes], name: str, report: ImportReport
) -> list[tuple[int, dict[str, Any]]]:
    lines: list[tuple[int, dict[str, Any]]] = []
    raw = members.get(name)
    if raw is None:
        return lines
    for number, line in enumerate(raw.decode("utf-8", "replace").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            report.skip(f"{name}:{number}", f"unreadable line ({exc.msg})")
            continue
        if not isinstance(value, dict):
            report.skip(f"{name}:{number}", "not a JSON object")
            continue
        lines.append((number, value))
    return lines
