"""Import a skills folder (`<name>/SKILL.md`, or dsh's flat `<name>.md`).

The folder is packed as the tar the skills app reads and handed to its
`skills_import` service: new names are created, changed ones get a new
version, identical ones are left alone (so a second run adds nothing).
Files beside a SKILL.md (scripts, references) are not skills and are
reported as skipped.
"""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import TYPE_CHECKING

from contexts.errors import Invalid
from contexts.models import Workspace
from memflow_site.porting.report import ImportReport, progress_bar

if TYPE_CHECKING:
    from django.contrib.auth.models import User

FORMAT = "skills"
_IGNORED_DIRS = {".git", "node_modules", "__pycache__", ".venv"}


def folder_tar(root: Path) -> tuple[bytes, list[str]]:
    """A tar.gz of the folder's Markdown files, and the other files (not read)."""
    buffer = io.BytesIO()
    others: list[str] = []
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for file in sorted(root.rglob("*")):
            relative = file.relative_to(root)
            if any(part in _IGNORED_DIRS for part in relative.parts) or not file.is_file():
                continue
            if file.is_symlink() or file.suffix.lower() != ".md":
                others.append(relative.as_posix())
                continue
            archive.add(str(file), arcname=relative.as_posix(), recursive=False)
    return buffer.getvalue(), others


def skills_data_import(
    *, data: bytes, workspace: Workspace, user: User | None, report: ImportReport
) -> None:
    """A tar(.gz) of a skills folder, through the skills app's own import."""
    # Imported here: the other formats do not need the skills app.
    from skills import services as skill_services

    result = skill_services.skills_import(
        workspace=workspace, user=user, data=data, scope="workspace"
    )
    report.added["skills"] += len(result.created)
    report.added["skill versions"] += len(result.versioned)
    report.present["skills"] += len(result.unchanged)
    for item in result.skipped:
        report.skip(item.get("path", "?"), item.get("reason", "skipped"))


def skills_import(
    *,
    path: str | Path,
    workspace: Workspace,
    user: User | None = None,
    progress: bool = False,
) -> ImportReport:
    root = Path(path)
    if not root.is_dir():
        raise Invalid(f"{path} is not a folder of skills.", code="not_a_directory")
    report = ImportReport(format=FORMAT, source=str(root), workspace=workspace.slug)
    with progress_bar(enabled=progress, label="skills", total=1) as bar:
        data, others = folder_tar(root)
        for other in others:
            report.skip(other, "not a skill file")
        skills_data_import(data=data, workspace=workspace, user=user, report=report)
        bar.update()
    return report
