"""Background jobs of the memory engine (run by django-q2 workers)."""

from __future__ import annotations

import logging

from contexts.models import Workspace
from memories import services

logger = logging.getLogger(__name__)


def cleanup_workspace(workspace_id: int) -> int:
    workspace = Workspace.objects.filter(pk=workspace_id).first()
    if workspace is None:
        return 0
    report = services.memory_cleanup(workspace=workspace, dry_run=False)
    if report.removed:
        logger.info("cleanup removed %d faded memories from %s", report.removed, workspace.slug)
    return report.removed


def cleanup_all_workspaces() -> int:
    """The daily schedule: forget what faded below each workspace's threshold."""
    return sum(cleanup_workspace(pk) for pk in Workspace.objects.values_list("pk", flat=True))
