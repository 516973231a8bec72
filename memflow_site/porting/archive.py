"""memflow's own portable archive: `memflow export` writes it, `memflow import archive` reads it.

A tar.gz with

    manifest.json        format, version, memflow version, counts, core limits, context options
    memories.jsonl       one memory a line, by (created_at, id); ids are export ids 1..n
    core/MEMORY.md       the workspace's core document, as an HME file
    core/USER.md         with `--user`: that user's USER document
    declarations.jsonl   {"directory", "source_text"}, by directory
    documents.jsonl      {"path", "content"}, by path
    skills/<name>/SKILL.md
    compression.jsonl    with `--with-compression-refs`: {"sha256", "content_type", …}
    compression/<sha256> the original, byte for byte

Links inside `memories.jsonl` (`superseded_by`, `evidence`, and the
`tombstone_of` / `evidence_ids` keys of metadata) name export ids. The
archive has no dates of its own and fixed tar and gzip headers, so the same
workspace content always gives the same bytes: export → import into an
empty workspace → export gives the archive back byte for byte.

Importing keeps every stored field — text, compartment, state key and
value, validity interval, source, app, strength, access count, last access,
pinned, expiry, metadata, creation time, owner and session — and re-embeds
the texts with the running model. Rows are inserted unfolded (an archive
holds distinct rows, tombstones included), through the engine's own insert,
which keeps the lexical statistics exact. A row counts as already present
when the workspace has one with the same text, creation time, compartment
and state key, so a second import adds nothing and an interrupted one
resumes.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import io
import json
import posixpath
import tarfile
import zlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from contexts import services as context_services
from contexts.errors import Invalid, MemflowError
from contexts.flowctx import originals
from contexts.flowctx import services as flowctx_services
from contexts.models import (
    AgentSession,
    CompressionRef,
    ContextDocument,
    Declaration,
    Workspace,
)
from contexts.selectors import CONTEXT_SETTINGS_KEY
from memflow_site.porting.hme import core_text_import
from memflow_site.porting.ledger import history_restore, skip_reason
from memflow_site.porting.memflow_dir import documents_store
from memflow_site.porting.report import ExportReport, ImportReport, Progress, chunks, progress_bar
from memflow_site.porting.skills_folder import skills_data_import
from memflow_site.version import __version__
from memories import core, selectors, services
from memories.models import CoreMemory, Memory, MemoryEvidence

if TYPE_CHECKING:
    from django.contrib.auth.models import User

FORMAT = "archive"
ARCHIVE_FORMAT = "memflow-archive"
ARCHIVE_VERSION = 1
MAX_MEMBER_BYTES = 1024 * 1024 * 1024
# Metadata keys whose values are memory ids (the engine writes them).
ID_METADATA_KEYS = ("tombstone_of", "evidence_ids")


# --- writing --------------------------------------------------------------------------------


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


def memories_export(*, workspace: Workspace, bar: Progress) -> tuple[str, dict[str, int]]:
    """`memories.jsonl` and its counts."""
    order = ("created_at", "id")
    pks = list(
        Memory.objects.filter(workspace=workspace).order_by(*order).values_list("pk", flat=True)
    )
    export_id = {pk: n for n, pk in enumerate(pks, start=1)}
    evidence: dict[int, list[int]] = defaultdict(list)
    for conclusion, item in MemoryEvidence.objects.filter(
        conclusion__workspace=workspace
    ).values_list("conclusion_id", "evidence_id"):
        if item in export_id:
            evidence[conclusion].append(export_id[item])
    bar.grow(len(pks))
    out = io.StringIO()
    counts = {"memories": 0, "supersede links": 0, "evidence links": 0}
    rows = (
        Memory.objects.filter(workspace=workspace)
        .select_related("user", "session")
        .defer("embedding", "lex")
        .order_by(*order)
    )
    for memory in rows.iterator(chunk_size=2000):
        superseded_by = export_id.get(memory.superseded_by_id or 0)
        links = sorted(evidence.get(memory.pk, []))
        out.write(
            _json_line(
                {
                    "id": export_id[memory.pk],
                    "text": memory.text,
                    "compartment": memory.compartment,
                    "state_key": memory.state_key,
                    "state_value": memory.state_value,
                    "valid_from": _iso(memory.valid_from),
                    "valid_to": _iso(memory.valid_to),
                    "superseded_by": superseded_by,
                    "evidence": links,
                    "source": memory.source,
                    "app": memory.app,
                    "user": memory.user.username if memory.user else None,
                    "session": memory.session.external_id if memory.session else None,
                    "strength": memory.strength,
                    "access_count": memory.access_count,
                    "last_accessed": _iso(memory.last_accessed),
                    "pinned": memory.pinned,
                    "expires_at": _iso(memory.expires_at),
                    "metadata": _remap_ids(memory.metadata or {}, export_id),
                    "created_at": _iso(memory.created_at),
                }
            )
        )
        counts["memories"] += 1
        counts["supersede links"] += superseded_by is not None
        counts["evidence links"] += len(links)
        bar.update()
    return out.getvalue(), counts


def _core_export(
    *, workspace: Workspace, user: User | None, members: dict[str, bytes]
) -> dict[str, Any]:
    manifest: dict[str, Any] = {}
    targets: list[tuple[str, User | None]] = [("memory", None)]
    if user is not None:
        targets.append(("user", user))
    for scope, owner in targets:
        owner_filter: dict[str, Any] = (
            {"scope": scope, "user": owner}
            if scope == "user"
            else {"scope": scope, "workspace": workspace}
        )
        doc = CoreMemory.objects.filter(**owner_filter).first()
        if doc is None:
            continue
        entry: dict[str, Any] = {"limit": doc.char_limit}
        if owner is not None:
            entry["username"] = owner.username
        if doc.content:
            name = f"core/{core.LABELS[scope]}.md"
            members[name] = core.core_export_text(
                core.core_view(scope=scope, user=owner, workspace=workspace)
            ).encode("utf-8")
            entry["file"] = name
        manifest[scope] = entry
    return manifest


def _skills_export(*, workspace: Workspace, members: dict[str, bytes]) -> int:
    from skills.folder import skill_md_render
    from skills.selectors import skills_export_files

    files = skills_export_files(workspace=workspace, user=None, status="available")
    for item in files:
        members[f"skills/{item.name}/SKILL.md"] = skill_md_render(
            name=item.name, description=item.description, body=item.body, metadata=item.metadata
        ).encode("utf-8")
    return len(files)


def _compression_export(*, workspace: Workspace, members: dict[str, bytes]) -> tuple[int, int]:
    """Retrievable refs only; an expired one answers 404 already. (exported, left out)"""
    now = timezone.now()
    lines = io.StringIO()
    exported = expired = 0
    for ref in CompressionRef.objects.filter(workspace=workspace).order_by("sha256").iterator():
        if not ref.pinned and ref.expires_at is not None and ref.expires_at <= now:
            expired += 1
            continue
        lines.write(
            _json_line(
                {
                    "sha256": ref.sha256,
                    "size": ref.size,
                    "content_type": ref.content_type,
                    "tool_name": ref.tool_name,
                    "exit_code": ref.exit_code,
                    "pinned": ref.pinned,
                }
            )
        )
        members[f"compression/{ref.sha256}"] = bytes(ref.content)
        exported += 1
    members["compression.jsonl"] = lines.getvalue().encode("utf-8")
    return exported, expired


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


def workspace_export(
    *,
    workspace: Workspace,
    out: str | Path,
    user: User | None = None,
    with_compression_refs: bool = False,
    progress: bool = False,
) -> ExportReport:
    """Write the workspace as a portable archive (see the module docstring)."""
    members: dict[str, bytes] = {}
    notes: list[str] = []
    with progress_bar(enabled=progress, label="export", total=5) as bar:
        text, counts = memories_export(workspace=workspace, bar=bar)
        members["memories.jsonl"] = text.encode("utf-8")
        core_manifest = _core_export(workspace=workspace, user=user, members=members)
        counts["core files"] = sum(1 for entry in core_manifest.values() if "file" in entry)
        bar.update()
        declarations = io.StringIO()
        for directory, source_text in (
            Declaration.objects.filter(workspace=workspace)
            .order_by("directory")
            .values_list("directory", "source_text")
        ):
            declarations.write(_json_line({"directory": directory, "source_text": source_text}))
            counts["declarations"] = counts.get("declarations", 0) + 1
        members["declarations.jsonl"] = declarations.getvalue().encode("utf-8")
        documents = io.StringIO()
        for path, content in (
            ContextDocument.objects.filter(workspace=workspace)
            .order_by("path")
            .values_list("path", "content")
            .iterator()
        ):
            documents.write(_json_line({"path": path, "content": content}))
            counts["documents"] = counts.get("documents", 0) + 1
        members["documents.jsonl"] = documents.getvalue().encode("utf-8")
        bar.update()
        counts["skills"] = _skills_export(workspace=workspace, members=members)
        bar.update()
        if with_compression_refs:
            counts["compression refs"], expired = _compression_export(
                workspace=workspace, members=members
            )
            if expired:
                notes.append(f"{expired} expired compression refs left out")
        bar.update()
        manifest: dict[str, Any] = {
            "format": ARCHIVE_FORMAT,
            "version": ARCHIVE_VERSION,
            "memflow": __version__,
            "workspace": {"slug": workspace.slug, "name": workspace.name},
            "embedding_models": sorted(
                set(
                    Memory.objects.filter(workspace=workspace)
                    .exclude(embedding_model="")
                    .values_list("embedding_model", flat=True)
                    .distinct()
                )
            ),
            "counts": {k: v for k, v in sorted(counts.items())},
            "core": core_manifest,
            "with_compression_refs": with_compression_refs,
        }
        options = (workspace.settings or {}).get(CONTEXT_SETTINGS_KEY)
        if options:
            manifest["context_options"] = options
        members["manifest.json"] = (
            json.dumps(manifest, ensure_ascii=False, sort_keys=True, indent=2) + "\n"
        ).encode("utf-8")
        data = archive_bytes(members)
        out = Path(out)
        out.write_bytes(data)
        bar.update()
    return ExportReport(path=out, bytes=len(data), counts=counts, notes=notes)


# --- reading ---------------------------------------------------------------------------------


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


# --- importing -----------------------------------------------------------------------------------


@dataclass
class _Row:
    number: int  # line in memories.jsonl
    eid: int
    line: dict[str, Any]
    item: services.RememberInput
    created_at: dt.datetime
    valid_from: dt.datetime
    valid_to: dt.datetime | None
    last_accessed: dt.datetime
    expires_at: dt.datetime | None
    strength: float
    access_count: int
    pinned: bool

    @property
    def label(self) -> str:
        return f"memories.jsonl:{self.number} (#{self.eid})"

    @property
    def identity(self) -> tuple[str, dt.datetime, str, str]:
        return (self.item.text, self.created_at, self.item.compartment, self.item.state_key)


@dataclass
class _Imported:
    pks: dict[int, int] = field(default_factory=dict)  # export id -> row
    created: set[int] = field(default_factory=set)


def _time(value: Any) -> dt.datetime | None:
    if value is None:
        return None
    parsed = dt.datetime.fromisoformat(str(value))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def _row(number: int, line: dict[str, Any]) -> _Row:
    created = _time(line["created_at"])
    if created is None:
        raise ValueError("no created_at")
    text = line["text"]
    if not isinstance(text, str):
        raise ValueError("no text")
    metadata = line.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ValueError("metadata is not an object")
    valid_from = _time(line.get("valid_from")) or created
    valid_to = _time(line.get("valid_to"))
    if valid_to is not None and valid_to < valid_from:
        raise ValueError("valid_to before valid_from")
    strength = float(line["strength"]) if line.get("strength") is not None else 1.0
    if strength != strength or strength in (float("inf"), float("-inf")):
        raise ValueError("strength is not a number")
    return _Row(
        number=number,
        eid=int(line["id"]),
        line=line,
        item=services.RememberInput(
            text=text,
            compartment=str(line.get("compartment") or ""),
            state_key=str(line.get("state_key") or ""),
            state_value=str(line.get("state_value") or ""),
            source=str(line.get("source") or "import"),
            app=str(line.get("app") or ""),
            metadata=metadata,
            created_at=created,
        ),
        created_at=created,
        valid_from=valid_from,
        valid_to=valid_to,
        last_accessed=_time(line.get("last_accessed")) or created,
        expires_at=_time(line.get("expires_at")),
        strength=strength,
        access_count=max(0, int(line.get("access_count") or 0)),
        pinned=bool(line.get("pinned")),
    )


def archive_import(
    *,
    path: str | Path,
    workspace: Workspace,
    user: User | None = None,
    progress: bool = False,
) -> ImportReport:
    """Take an archive written by `workspace_export` back, into `workspace`."""
    path = Path(path)
    report = ImportReport(format=FORMAT, source=str(path), workspace=workspace.slug)
    members = archive_members(path.read_bytes())
    try:
        manifest = json.loads(members["manifest.json"])
    except (KeyError, json.JSONDecodeError, UnicodeDecodeError):
        raise Invalid(
            f"{path} has no readable manifest.json: not a memflow archive.",
            code="unreadable_archive",
        ) from None
    if manifest.get("format") != ARCHIVE_FORMAT:
        raise Invalid(f"{path} is not a memflow archive.", code="unreadable_archive")
    if int(manifest.get("version") or 0) > ARCHIVE_VERSION:
        raise Invalid(
            f"{path} is a version {manifest.get('version')} archive; this memflow reads "
            f"version {ARCHIVE_VERSION}. Upgrade memflow to import it.",
            code="archive_too_new",
        )
    lines = _jsonl(members, "memories.jsonl", report)
    with progress_bar(enabled=progress, label="archive", total=len(lines) * 2 + 4) as bar:
        _context_import(manifest, members, workspace=workspace, report=report)
        bar.update()
        _core_import(manifest, members, workspace=workspace, user=user, report=report)
        bar.update()
        imported = _memories_import(lines, workspace=workspace, report=report, bar=bar)
        _links_import(lines, imported, workspace=workspace, report=report, bar=bar)
        skills = {
            name[len("skills/") :]: data
            for name, data in members.items()
            if name.startswith("skills/")
        }
        if skills:
            skills_data_import(
                data=archive_bytes(skills), workspace=workspace, user=user, report=report
            )
        bar.update()
        _compression_import(members, workspace=workspace, report=report)
        bar.update()
    return report


def _context_import(
    manifest: dict[str, Any],
    members: dict[str, bytes],
    *,
    workspace: Workspace,
    report: ImportReport,
) -> None:
    options = manifest.get("context_options")
    if options:
        current = (workspace.settings or {}).get(CONTEXT_SETTINGS_KEY)
        if current == options:
            report.present["context options"] += 1
        elif current:
            report.skip("context options", "the workspace has context options of its own")
        else:
            try:
                context_services.context_config_set(workspace=workspace, options=options)
                report.added["context options"] += 1
            except MemflowError as exc:
                report.skip("context options", exc.detail)

    documents = []
    for number, line in _jsonl(members, "documents.jsonl", report):
        if not isinstance(line.get("path"), str) or not isinstance(line.get("content"), str):
            report.skip(f"documents.jsonl:{number}", "no path or content")
            continue
        documents.append((line["path"], line["content"]))
    stored = dict(
        ContextDocument.objects.filter(
            workspace=workspace, path__in=[p for p, _ in documents]
        ).values_list("path", "content")
    )
    todo = []
    for name, content in documents:
        if stored.get(name) == content:
            report.present["documents"] += 1
        else:
            todo.append((name, content))
    documents_store(workspace=workspace, documents=todo, report=report)

    for number, line in _jsonl(members, "declarations.jsonl", report):
        directory, text = line.get("directory"), line.get("source_text")
        if not isinstance(directory, str) or not isinstance(text, str):
            report.skip(f"declarations.jsonl:{number}", "no directory or source_text")
            continue
        existing = Declaration.objects.filter(workspace=workspace, directory=directory).first()
        if existing is not None and existing.source_text == text:
            report.present["declarations"] += 1
            continue
        try:
            context_services.declaration_store(
                workspace=workspace, directory=directory, source_text=text
            )
        except MemflowError as exc:
            report.skip(f"declaration of {directory}", exc.detail)
        else:
            report.added["declarations"] += 1


def _core_import(
    manifest: dict[str, Any],
    members: dict[str, bytes],
    *,
    workspace: Workspace,
    user: User | None,
    report: ImportReport,
) -> None:
    for scope, entry in sorted((manifest.get("core") or {}).items()):
        if scope not in core.LABELS or not isinstance(entry, dict):
            continue
        label = f"core/{core.LABELS[scope]}.md"
        owner: User | None = None
        if scope == "user":
            owner = user or (
                get_user_model()
                .objects.filter(username__iexact=str(entry.get("username") or ""))
                .first()
            )
            if owner is None:
                report.skip(label, f"no user {entry.get('username')!r} here: give --user NAME")
                continue
        owner_filter: dict[str, Any] = (
            {"scope": scope, "user": owner}
            if scope == "user"
            else {"scope": scope, "workspace": workspace}
        )
        doc = CoreMemory.objects.filter(**owner_filter).first()
        limit = entry.get("limit")
        # A USER document is the user's, in every workspace: its limit is theirs to keep.
        settable = doc is None or (scope == "memory" and not doc.content)
        if isinstance(limit, int) and settable and (doc is None or doc.char_limit != limit):
            try:
                core.core_set_limit(scope=scope, workspace=workspace, user=owner, limit=limit)
            except MemflowError as exc:
                report.warn(label, f"limit {limit} not set: {exc.detail}")
        file = entry.get("file")
        if file and file in members:
            core_text_import(
                text=members[file].decode("utf-8"),
                scope=scope,
                workspace=workspace,
                user=owner,
                label=label,
                report=report,
            )


def _memories_import(
    lines: list[tuple[int, dict[str, Any]]],
    *,
    workspace: Workspace,
    report: ImportReport,
    bar: Progress,
) -> _Imported:
    imported = _Imported()
    rows: list[_Row] = []
    for number, line in lines:
        try:
            rows.append(_row(number, line))
        except (KeyError, TypeError, ValueError) as exc:
            report.skip(f"memories.jsonl:{number}", f"unreadable memory ({exc})")
            bar.update()
    rows.sort(key=lambda r: r.eid)

    existing: dict[tuple[str, dt.datetime, str, str], list[int]] = defaultdict(list)
    for times in chunks(sorted({r.created_at for r in rows}), 5000):
        for pk, text, created, compartment, state_key in (
            Memory.objects.filter(workspace=workspace, created_at__in=times)
            .order_by("created_at", "id")
            .values_list("pk", "text", "created_at", "compartment", "state_key")
        ):
            existing[(text, created, compartment, state_key)].append(pk)
    current_states = set(
        Memory.objects.filter(workspace=workspace, valid_to__isnull=True)
        .exclude(state_key="")
        .values_list("state_key", flat=True)
    )

    todo: list[_Row] = []
    for row in rows:
        matches = existing.get(row.identity)
        if matches:
            imported.pks[row.eid] = matches.pop(0)
            report.present["memories"] += 1
            bar.update()
            continue
        try:
            services.memory_validate(workspace=workspace, item=row.item)
        except MemflowError as exc:
            report.skip(row.label, skip_reason(exc))
            bar.update()
            continue
        if row.item.state_key and row.valid_to is None:
            if row.item.state_key in current_states:
                report.skip(
                    row.label,
                    f"state key {row.item.state_key!r} has a current value in this workspace",
                )
                bar.update()
                continue
            current_states.add(row.item.state_key)
        todo.append(row)

    users = _users({r.line.get("user") for r in todo}, report)
    sessions: dict[str, AgentSession] = {}
    # The workspace's own embedder: what its recall searches with.
    embedder = selectors.embedder_for(workspace)
    for batch in chunks(todo, 64):
        vectors = embedder.encode([r.item.text for r in batch])
        owners = [users.get(str(r.line.get("user") or "")) for r in batch]
        for row, owner in zip(batch, owners, strict=True):
            external = row.line.get("session")
            if external and external not in sessions:
                sessions[external] = context_services.agent_session_get_or_create(
                    workspace=workspace, external_id=str(external), user=owner
                )
        with transaction.atomic():
            # The engine's own unfolded insert (what consolidation and undo
            # use): an archive holds distinct rows, tombstones included, that
            # dedupe must not fold; the term statistics stay exact.
            services._workspace_lock(workspace)
            for row, vector, owner in zip(batch, vectors, owners, strict=True):
                external = row.line.get("session")
                memory = services._insert_unfolded(
                    workspace=workspace,
                    item=row.item,
                    vector=vector,
                    model_id=embedder.model_id,
                    user=owner,
                    session=sessions.get(external) if external else None,
                    valid_from=row.valid_from,
                    valid_to=row.valid_to,
                    strength=row.strength,
                    access_count=row.access_count,
                    last_accessed=row.last_accessed,
                    pinned=row.pinned,
                    expires_at=row.expires_at,
                )
                imported.pks[row.eid] = memory.pk
                imported.created.add(memory.pk)
                report.added["memories"] += 1
        bar.update(len(batch))
    return imported


def _users(names: Iterable[Any], report: ImportReport) -> dict[str, User]:
    wanted = {str(n) for n in names if n}
    found: dict[str, User] = {
        u.username: u for u in get_user_model().objects.filter(username__in=wanted)
    }
    for name in sorted(wanted - set(found)):
        report.warn(f"user {name}", "no such user here: their memories are imported without one")
    return found


def _links_import(
    lines: list[tuple[int, dict[str, Any]]],
    imported: _Imported,
    *,
    workspace: Workspace,
    report: ImportReport,
    bar: Progress,
) -> None:
    """Supersede links, evidence links and id-valued metadata, by the new row ids."""
    pks = imported.pks
    wanted = set(pks.values())
    # The whole workspace in one read: an archive can name more rows than a query's IN list.
    state = {
        pk: (superseded_by, metadata)
        for pk, superseded_by, metadata in Memory.objects.filter(workspace=workspace)
        .values_list("pk", "superseded_by_id", "metadata")
        .iterator(chunk_size=5000)
        if pk in wanted
    }
    wanted_evidence: set[tuple[int, int]] = set()
    for _number, line in lines:
        bar.update()
        try:
            eid = int(line["id"])
        except (KeyError, TypeError, ValueError):
            continue
        pk = pks.get(eid)
        if pk is None or pk not in state:
            continue
        superseded_by, metadata = state[pk]
        target_eid = line.get("superseded_by")
        if target_eid is not None:
            target = pks.get(int(target_eid))
            if target is None:
                report.skip(f"supersede link #{eid} -> #{target_eid}", "the successor was skipped")
            elif superseded_by == target:
                report.present["supersede links"] += 1
            elif superseded_by is None:
                history_restore(workspace=workspace, pk=pk, superseded_by_id=target)
                report.added["supersede links"] += 1
            else:
                report.skip(
                    f"supersede link #{eid} -> #{target_eid}", "already superseded by another"
                )
        for evidence_eid in line.get("evidence") or []:
            evidence = pks.get(int(evidence_eid))
            if evidence is None:
                report.skip(f"evidence link #{eid} -> #{evidence_eid}", "the evidence was skipped")
            elif evidence != pk:
                wanted_evidence.add((pk, evidence))
        raw = line.get("metadata") or {}
        if isinstance(raw, dict) and (pk in imported.created or metadata == raw):
            mapped = _remap_ids(raw, pks)
            if mapped != metadata:
                history_restore(workspace=workspace, pk=pk, metadata=mapped)
    have = set(
        MemoryEvidence.objects.filter(conclusion__workspace=workspace).values_list(
            "conclusion_id", "evidence_id"
        )
    )
    new = sorted(wanted_evidence - have)
    MemoryEvidence.objects.bulk_create(
        [MemoryEvidence(conclusion_id=c, evidence_id=e) for c, e in new], ignore_conflicts=True
    )
    report.added["evidence links"] += len(new)
    report.present["evidence links"] += len(wanted_evidence & have)


def _compression_import(
    members: dict[str, bytes], *, workspace: Workspace, report: ImportReport
) -> None:
    for number, line in _jsonl(members, "compression.jsonl", report):
        sha = str(line.get("sha256") or "")
        label = f"compression ref {sha[:12] or f'line {number}'}"
        content = members.get(f"compression/{sha}")
        if content is None:
            report.skip(label, "its original is missing from the archive")
            continue
        if hashlib.sha256(content).hexdigest() != sha:
            report.skip(label, "its original does not match its hash")
            continue
        existing = CompressionRef.objects.filter(workspace=workspace, sha256=sha).first()
        if existing is not None and (existing.pinned or not line.get("pinned")):
            report.present["compression refs"] += 1
            continue
        try:
            stored = flowctx_services.compression_store(
                workspace=workspace,
                content=content,
                content_type=_importable_type(line.get("content_type")),
                tool_name=str(line.get("tool_name") or ""),
                exit_code=exit_code
                if isinstance(exit_code := line.get("exit_code"), int)
                else None,
            )
        except MemflowError as exc:
            report.skip(label, exc.detail)
            continue
        if line.get("pinned"):
            flowctx_services.compression_pin(ref=stored.ref, pinned=True)
        if existing is None:
            report.added["compression refs"] += 1
        else:
            report.added["compression pins"] += 1


def _importable_type(value: object) -> str:
    """An archive's content type, or bytes when it is not a valid one: the original still lands."""
    text = str(value or originals.DEFAULT_TEXT).strip()
    return text if originals.is_valid_content_type(text) else originals.DEFAULT_BINARY
