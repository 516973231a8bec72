"""Background jobs of flowctx (django-q2): summary folds and the ref cleanup."""

from __future__ import annotations

import logging

from django.db import transaction
from django_q.tasks import async_task

from contexts.flowctx import services
from contexts.models import AgentSession

logger = logging.getLogger(__name__)


def summaries_enqueue(*, session: AgentSession, force: bool = False) -> int:
    """Bump the session's fold generation and queue a fold for it (after commit)."""
    generation = services.summaries_request_fold(session=session)
    transaction.on_commit(
        lambda: async_task(
            "contexts.flowctx.tasks.summaries_fold",
            session.pk,
            generation,
            force,
            task_name=f"fold-{session.pk}-{generation}",
        )
    )
    return generation


def summaries_fold(session_id: int, generation: int, force: bool = False) -> int:
    session = AgentSession.objects.select_related("workspace").filter(pk=session_id).first()
    if session is None or session.fold_generation != generation:
        return 0  # gone, or superseded before it started
    nodes = services.summaries_fold(session=session, generation=generation, force=force)
    return len(nodes)


def compression_cleanup() -> int:
    """The daily schedule: drop unpinned compression refs past their expiry."""
    deleted = services.compression_cleanup()
    if deleted:
        logger.info("compression cleanup removed %d expired refs", deleted)
    return deleted
