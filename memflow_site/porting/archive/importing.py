"""Taking an archive back into a workspace: context, core documents, memories,
skills and compression refs, each reported."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model

from contexts.errors import Invalid, MemflowError
from contexts.flowctx import originals
from contexts.flowctx import services as flowctx_services
from contexts.models import (
    CompressionRef,
    ContextDocument,
    Declaration,
    Workspace,
)
from contexts.tenancy import services as context_services
from contexts.tenancy.selectors import CONTEXT_SETTINGS_KEY
from memflow_site.porting.archive.rows import _links_import, _memories_import
from memflow_site.porting.archive.tarball import (
    ARCHIVE_FORMAT,
    ARCHIVE_VERSION,
    FORMAT,
    _jsonl,
    archive_bytes,
    archive_members,
)
from memflow_site.porting.hme import core_text_import
from memflow_site.porting.memflow_dir import documents_store
from memflow_site.porting.report import ImportReport, progress_bar
from memflow_site.porting.skills_folder import skills_data_import
from memories import core
from memories.models import CoreMemory

if TYPE_CHECKING:
    from django.contrib.auth.models import User


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
                masked_before=[str(m)[:200] for m in masked]
                if isinstance(masked := line.get("masked"), list)
                else (),
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
