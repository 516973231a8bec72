"""Writing a workspace out as an archive."""

from __future__ import annotations

import hashlib
import io
import json
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from contexts.flowctx import services as flowctx_services
from contexts.models import (
    CompressionRef,
    ContextDocument,
    Declaration,
    Workspace,
)
from contexts.tenancy.selectors import CONTEXT_SETTINGS_KEY
from memflow_site.cli.base import write_private
from memflow_site.porting.archive.tarball import (
    ARCHIVE_FORMAT,
    ARCHIVE_VERSION,
    _iso,
    _json_line,
    _remap_ids,
    archive_bytes,
)
from memflow_site.porting.report import ExportReport, Progress, progress_bar
from memflow_site.version import __version__
from memories import core
from memories.models import CoreMemory, Memory, MemoryEvidence
from memories.selectors import visible_to

if TYPE_CHECKING:
    from django.contrib.auth.models import User


def memories_export(
    *, workspace: Workspace, bar: Progress, user: User | None = None
) -> tuple[str, dict[str, int]]:
    """`memories.jsonl` and its counts."""
    order = ("created_at", "id")
    # Forgotten entries (tombstones) are not part of what the workspace knows;
    # private ones only when their author exports (as for USER core memory).
    kept = Memory.objects.filter(
        visible_to(user.pk if user else None), workspace=workspace, forgotten_at__isnull=True
    )
    pks = list(kept.order_by(*order).values_list("pk", flat=True))
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
    rows = kept.select_related("user", "session").defer("embedding", "lex").order_by(*order)
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
                    "private": memory.private,
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
        # The rule of what is kept holds for what leaves too: a ref kept before
        # credentials were masked (`masked` NULL) is masked on the way out, under its new hash.
        content, masked = bytes(ref.content), list[str]()
        if ref.masked is None:
            content, _, masked = flowctx_services.original_masked(content)
        sha = hashlib.sha256(content).hexdigest() if masked else ref.sha256
        lines.write(
            _json_line(
                {
                    "sha256": sha,
                    "size": len(content),
                    "content_type": ref.content_type,
                    "tool_name": ref.tool_name,
                    "exit_code": ref.exit_code,
                    "pinned": ref.pinned,
                    "masked": [*(ref.masked or []), *masked],
                }
            )
        )
        members[f"compression/{sha}"] = content
        exported += 1
    members["compression.jsonl"] = lines.getvalue().encode("utf-8")
    return exported, expired


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
        text, counts = memories_export(workspace=workspace, bar=bar, user=user)
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
        write_private(out, data)
        bar.update()
    return ExportReport(path=out, bytes=len(data), counts=counts, notes=notes)
