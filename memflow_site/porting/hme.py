"""Import HME files: MEMORY.md and USER.md into core memory, the archive into memories.

HME keeps `<workspace>/.dsh/hme/MEMORY.md` and `$DSH_HOME/hme/USER.md`, fact
lines ending in ` §`, and an archive tier: `archive.md` (categories as
headings) or `archive/<tag>.md`, lines such as

    - [#facts] [v:3] [expires:2026-12-01] The staging database is db-stage-2 §

The core files go through `core_import_text` (an empty document takes the
file byte for byte; otherwise only its missing lines are added). Each archive
line becomes a long-term memory in the compartment of its category, with its
expiry; `v` is kept in the memory's metadata.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from django.utils import timezone

from contexts.errors import Invalid, MemflowError
from contexts.models import Workspace
from contexts.secrets import find_secret
from contexts.tenancy.audit import Actor, Origin
from memflow_site.porting.ledger import Incoming, remember_incoming
from memflow_site.porting.report import ImportReport, progress_bar
from memories import core, services

if TYPE_CHECKING:
    from django.contrib.auth.models import User

FORMAT = "hme"
MAX_FILE_BYTES = 8 * 1024 * 1024

_TOKEN = re.compile(r"\[(#[^\]\s]+|v:\s*\d+|expires:[^\]]*)\]\s*")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_SINGULAR = {"fact": "facts", "preference": "preferences", "method": "methods", "lesson": "lessons"}


def hme_base(path: Path) -> Path:
    """The folder holding the HME files: `path`, or its `.dsh/hme` when there is one."""
    nested = path / ".dsh" / "hme"
    return nested if nested.is_dir() else path


def category_of(tag: str) -> str:
    """An HME tag (`#Facts`, `lesson`) as a memflow compartment."""
    word = tag.strip().lstrip("#").strip().lower()
    word = re.sub(r"[^\w\-.]+", "-", word).strip("-")
    return _SINGULAR.get(word, word)[:64]


@dataclass(frozen=True)
class ArchiveLine:
    file: str
    line: int
    text: str
    category: str
    tag: str = ""
    version: int | None = None
    expires: str = ""

    @property
    def label(self) -> str:
        return f"{self.file}:{self.line}"


def archive_lines(text: str, *, file: str, default_category: str) -> list[ArchiveLine]:
    """The entries of one archive file; headings name the category of what follows."""
    category = default_category
    lines: list[ArchiveLine] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("<!--") or set(stripped) <= set("-=*_ "):
            continue
        heading = _HEADING.match(raw)
        if heading:
            category = category_of(heading.group(1)) or default_category
            continue
        body = _BULLET.sub("", raw, count=1).strip()
        tag = expires = ""
        version = None
        while True:
            token = _TOKEN.match(body)
            if not token:
                break
            value = token.group(1)
            if value.startswith("#"):
                tag = value
            elif value.startswith("v:"):
                version = int(value[2:].strip())
            else:
                expires = value[len("expires:") :].strip()
            body = body[token.end() :]
        lines.append(
            ArchiveLine(
                file=file,
                line=number,
                text=core.fact_of(body),
                category=category_of(tag) if tag else category,
                tag=tag,
                version=version,
                expires=expires,
            )
        )
    return lines


def _expiry(value: str) -> dt.datetime | None:
    if not value or value.lower() in ("never", "none", "-"):
        return None
    parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _read(path: Path, report: ImportReport, label: str) -> str | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            report.skip(label, "file over 8 MB")
            return None
        return path.read_text(encoding="utf-8").lstrip("\ufeff")
    except UnicodeDecodeError:
        report.skip(label, "not UTF-8 text")
    except OSError as exc:
        report.skip(label, f"unreadable ({exc.strerror or exc})")
    return None


def hme_import(
    *,
    path: str | Path,
    workspace: Workspace,
    user: User | None = None,
    progress: bool = False,
) -> ImportReport:
    """MEMORY.md, USER.md (needs `user`) and the archive of an HME folder."""
    base = hme_base(Path(path))
    report = ImportReport(format=FORMAT, source=str(base), workspace=workspace.slug)
    core_files = [(base / "MEMORY.md", "memory"), (base / "USER.md", "user")]
    archive_files: list[tuple[Path, str]] = []
    if (base / "archive.md").is_file():
        archive_files.append((base / "archive.md", "facts"))
    if (base / "archive").is_dir():
        archive_files += [
            (p, category_of(p.stem)) for p in sorted((base / "archive").glob("*.md")) if p.is_file()
        ]
    if not any(p.is_file() for p, _ in core_files) and not archive_files:
        raise Invalid(
            f"{base} has no MEMORY.md, USER.md, archive.md or archive/*.md.", code="no_hme_files"
        )

    present_core = sum(1 for file, _ in core_files if file.is_file())
    with progress_bar(enabled=progress, label="hme", total=present_core) as bar:
        for file, scope in core_files:
            if file.is_file():
                _core_file(file, scope, workspace=workspace, user=user, report=report)
                bar.update()
        entries: list[ArchiveLine] = []
        for file, category in archive_files:
            text = _read(file, report, file.name)
            if text is not None:
                name = str(file.relative_to(base))
                entries += archive_lines(text, file=name, default_category=category)
        bar.grow(len(entries))
        now = timezone.now()
        incoming = []
        for entry in entries:
            try:
                expires = _expiry(entry.expires)
            except ValueError:
                report.skip(entry.label, f"unreadable expiry {entry.expires!r}")
                bar.update()
                continue
            if expires is not None and expires <= now:
                report.skip(entry.label, f"expired on {expires:%Y-%m-%d}")
                bar.update()
                continue
            hme_meta: dict[str, object] = {"file": entry.file, "line": entry.line}
            if entry.tag:
                hme_meta["tag"] = entry.tag
            if entry.version is not None:
                hme_meta["v"] = entry.version
            digest = hashlib.sha256(entry.text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            incoming.append(
                Incoming(
                    key=f"{FORMAT}:{entry.category}:{digest}",
                    label=entry.label,
                    item=services.RememberInput(
                        text=entry.text,
                        compartment=entry.category,
                        source="import",
                        metadata={"hme": hme_meta},
                    ),
                    expires_at=expires,
                )
            )
        remember_incoming(
            workspace=workspace, user=user, fmt=FORMAT, incoming=incoming, report=report, bar=bar
        )
    return report


def _core_file(
    file: Path, scope: str, *, workspace: Workspace, user: User | None, report: ImportReport
) -> None:
    label = file.name
    if scope == "user" and user is None:
        report.skip(label, "USER.md belongs to a user: give --user NAME")
        return
    text = _read(file, report, label)
    if text is not None:
        core_text_import(
            text=text, scope=scope, workspace=workspace, user=user, label=label, report=report
        )


def core_text_import(
    *,
    text: str,
    scope: str,
    workspace: Workspace,
    user: User | None,
    label: str,
    report: ImportReport,
) -> None:
    """An HME core file into USER or MEMORY: its missing lines, secret lines refused."""
    lines = core.parse_lines(text.replace("\r\n", "\n"))
    clean = []
    for number, line in enumerate(lines, start=1):
        kind = find_secret(line)
        if kind:
            report.skip(f"{label} line {number}", f"secret refused (looks like a {kind})")
        else:
            clean.append(line)
    if not clean:
        return
    owner = user if scope == "user" else None
    view = core.core_view(scope=scope, user=owner, workspace=workspace)
    have = {core.fact_of(line) for line in view.lines}
    missing = [line for line in clean if core.fact_of(line) not in have]
    if not missing:
        report.present["core lines"] += len(clean)
        return
    # A clean file goes in as it is, so an empty document holds it byte for byte.
    body = text if len(clean) == len(lines) else "\n".join(clean) + "\n"
    try:
        core.core_import_text(
            scope=scope,
            workspace=workspace,
            user=owner,
            text=body,
            actor=Actor(origin=Origin.IMPORT, user=owner),
        )
    except MemflowError as exc:
        report.skip(label, exc.detail)
        return
    report.added["core lines"] += len(missing)
    report.present["core lines"] += len(clean) - len(missing)
