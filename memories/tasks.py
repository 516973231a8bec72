"""Background jobs of the memory engine (run by django-q2 workers)."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from contexts.errors import MemflowError
from contexts.models import Workspace
from contexts.tenancy.knobs import knob
from memories import embeddings, services
from memories.models import WorkspaceEmbedder

logger = logging.getLogger(__name__)


def cleanup_workspace(workspace_id: int) -> int:
    workspace = Workspace.objects.filter(pk=workspace_id).first()
    if workspace is None:
        return 0
    report = services.memory_cleanup(workspace=workspace, dry_run=False)
    if report.removed or report.purged:
        logger.info(
            "cleanup forgot %d faded memories and purged %d tombstones in %s",
            report.removed,
            report.purged,
            workspace.slug,
        )
    return report.removed


def cleanup_all_workspaces() -> int:
    """The daily schedule: forget what faded below each workspace's threshold."""
    return sum(cleanup_workspace(pk) for pk in Workspace.objects.values_list("pk", flat=True))


def index_pending_fold() -> dict[str, int]:
    """Every five minutes: new index entries folded in off the hooks' time (see services)."""
    folded = services.index_pending_fold()
    if any(folded.values()):
        logger.info("folded pending index entries: %s", folded)
    return folded


def reembed_step(workspace_id: int, generation: int) -> str:
    """One stretch of a workspace's re-embed (it queues the next itself)."""
    return services.reembed_step(workspace_id=workspace_id, generation=generation)


# A step that has not reported for this long is taken to have died with its worker.
REEMBED_STALLED_AFTER = timedelta(seconds=2 * services.REEMBED_STEP_SECONDS)


def reembed_resume_all() -> int:
    """Every five minutes: resume stalled re-embeds, and start the ones asked for in settings.

    A worker killed mid-step leaves its row's heartbeat behind; a workspace
    whose `settings["embedder"]` was changed without
    `services.workspace_embedder_set` gets its re-embed here. Returns how
    many re-embeds were (re)started.
    """
    started = 0
    now = timezone.now()
    for job in WorkspaceEmbedder.objects.exclude(target_backend=""):
        last = job.heartbeat_at or job.started_at
        if last is None or now - last > REEMBED_STALLED_AFTER:
            with transaction.atomic():
                services.reembed_enqueue(workspace_id=job.workspace_id, generation=job.generation)
            started += 1
    jobs = {job.workspace_id: job for job in WorkspaceEmbedder.objects.all()}
    for workspace in Workspace.objects.all():
        requested = str(knob(workspace, "embedder"))
        row = jobs.get(workspace.pk)
        serving = row.backend if row else embeddings.DEFAULT_BACKEND
        underway = row.target_backend if row else ""
        if requested == serving and not underway:
            continue
        if requested == (underway or serving):
            continue
        try:
            services.workspace_embedder_set(workspace=workspace, backend=requested)
            started += 1
        except MemflowError as exc:
            if getattr(exc, "code", "") == "embedder_swapping":
                continue  # asked again while the previous choice is swapped in: next time
            WorkspaceEmbedder.objects.update_or_create(
                workspace=workspace,
                defaults={"error": f"{exc}"},
                create_defaults={"backend": serving, "error": f"{exc}"},
            )
            logger.warning("workspace %s asks for embedder %s: %s", workspace.slug, requested, exc)
    return started
