"""Import a MEMFLOW project directory into stored declarations and documents.

What is stored is what `memflow context push DIR` uploads — the declarations
DIR uses (`.dsh/context.yaml`, with the ones it inherits) and every file they
name, or the legacy `memory/*.md` when there is no declaration — plus every
`memory/**/*.md` of DIR, the project's persistent memory. The server then
assembles DIR's context from them exactly as the agent's disk would.
Paths stay the absolute paths of this machine.
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contexts.declarations import (
    DEVICE_FILE,
    ConfigError,
    ContextConfig,
    DiskSource,
    Unreadable,
    assemble,
    normalize_path,
    sha256_text,
)
from contexts.errors import Invalid, MemflowError
from contexts.models import ContextDocument, Declaration, Workspace
from contexts.secrets import find_secret
from contexts.tenancy import selectors as context_selectors
from contexts.tenancy import services as context_services
from memflow_site.porting.report import ImportReport, chunks, progress_bar

if TYPE_CHECKING:
    from django.contrib.auth.models import User

FORMAT = "memflow-dir"


class _RecordingSource(DiskSource):
    """The disk, remembering every file read."""

    def __init__(self) -> None:
        self.read: dict[str, str] = {}

    def read_text(self, path: str) -> str:
        text = super().read_text(path)
        self.read[path] = text
        return text


def _config(workspace: Workspace) -> ContextConfig:
    try:
        config = context_selectors.context_config_for(workspace=workspace)
    except ConfigError:
        config = ContextConfig()
    # Read everything a session could be given: no limits, no suppression.
    return dataclasses.replace(
        config,
        per_file_bytes=None,
        total_bytes=None,
        memory_bootstrap=True,
        skip_delegated=False,
        suppress_roots=(),
        ignore_declaration=False,
    )


def documents_store(
    *, workspace: Workspace, documents: list[tuple[str, str]], report: ImportReport
) -> None:
    """Store documents in calls of up to 1,000; a refused one is named, the rest stored."""
    for batch in chunks(documents, context_services.MAX_DOCUMENTS_PER_CALL):
        try:
            context_services.context_documents_store(workspace=workspace, documents=batch)
        except MemflowError:
            # One refused document refuses the call: store them one by one to name it.
            for name, text in batch:
                try:
                    context_services.context_documents_store(
                        workspace=workspace, documents=[(name, text)]
                    )
                except MemflowError as exc:
                    report.skip(name, exc.detail)
                    continue
                report.added["documents"] += 1
        else:
            report.added["documents"] += len(batch)


def memflow_dir_import(
    *,
    path: str | Path,
    workspace: Workspace,
    user: User | None = None,
    progress: bool = False,
) -> ImportReport:
    directory = normalize_path(os.path.abspath(path))
    report = ImportReport(format=FORMAT, source=directory, workspace=workspace.slug)
    if not Path(directory).is_dir():
        raise Invalid(f"{path} is not a directory.", code="not_a_directory")
    config = _config(workspace)
    declaration_path = posixpath.join(directory, config.declaration_file)
    memory_dir = Path(directory) / "memory"
    if not Path(declaration_path).is_file() and not memory_dir.is_dir():
        raise Invalid(
            f"{directory} has neither {config.declaration_file} nor a memory/ folder.",
            code="no_memflow_files",
        )
    source = _RecordingSource()
    declared = _declarations_read(source, directory, config, report)
    documents = _documents_read(source, declared, memory_dir, report)
    with progress_bar(
        enabled=progress, label="memflow-dir", total=len(declared) + len(documents)
    ) as bar:
        _documents_import(workspace, documents, report, bar)
        _declarations_import(workspace, declared, source, report, bar)
    return report


def _declarations_read(
    source: _RecordingSource, directory: str, config: ContextConfig, report: ImportReport
) -> dict[str, Any]:
    """The declarations a session in `directory` would be given, by path; what they
    name is read into `source` on the way, and what cannot be is reported."""
    assembly = assemble(
        source=source,
        directory=directory,
        config=config,
        env={},
        device=None,
        hostname=socket.gethostname(),
        delegation_depth=0,
    )
    for warning in assembly.warnings:
        report.skip("declaration", warning)
    for note in assembly.notes:
        if note.startswith("cannot read "):  # "cannot read PATH (DISPLAY): REASON"
            named, reason = note[len("cannot read ") :].split(" ", 1)[0], note.rsplit(": ", 1)[-1]
            report.skip(named, f"named by the declaration, cannot be read: {reason}")
        else:
            report.notes.append(note)
    return {d.path: d for d in assembly.declarations}


def _documents_read(
    source: _RecordingSource, declared: dict[str, Any], memory_dir: Path, report: ImportReport
) -> dict[str, str]:
    """Every document the declarations named, and the legacy memory/ folder's files."""
    documents = {
        p: text
        for p, text in source.read.items()
        if p not in declared and posixpath.basename(p) != DEVICE_FILE
    }
    if memory_dir.is_dir():
        for file in sorted(memory_dir.rglob("*.md")):
            name = normalize_path(str(file))
            if name in documents or not file.is_file():
                continue
            try:
                documents[name] = source.read_text(name)
            except Unreadable as exc:
                report.skip(name, exc.reason)
    return documents


def _documents_import(
    workspace: Workspace, documents: dict[str, str], report: ImportReport, bar: Any
) -> None:
    """Store the documents that are new or changed; one that holds a credential is refused."""
    existing = dict(
        ContextDocument.objects.filter(workspace=workspace, path__in=list(documents))
        .values_list("path", "sha256")
        .iterator()
    )
    todo: list[tuple[str, str]] = []
    for name, text in sorted(documents.items()):
        kind = find_secret(text)
        if kind:
            report.skip(name, f"secret refused (looks like a {kind})")
            bar.update()
        elif existing.get(name) == sha256_text(text):
            report.present["documents"] += 1
            bar.update()
        else:
            todo.append((name, text))
    documents_store(workspace=workspace, documents=todo, report=report)
    bar.update(len(todo))


def _declarations_import(
    workspace: Workspace,
    declared: dict[str, Any],
    source: _RecordingSource,
    report: ImportReport,
    bar: Any,
) -> None:
    """Store each declaration whose text differs from the one stored for its directory."""
    for ref in sorted(declared.values(), key=lambda d: d.path):
        text = source.read[ref.path]
        stored = Declaration.objects.filter(workspace=workspace, directory=ref.directory).first()
        if stored is not None and stored.source_text == text:
            report.present["declarations"] += 1
        else:
            try:
                context_services.declaration_store(
                    workspace=workspace, directory=ref.directory, source_text=text
                )
            except MemflowError as exc:
                report.skip(ref.path, exc.detail)
            else:
                report.added["declarations"] += 1
        bar.update()
