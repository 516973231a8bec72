"""Private entries: made so at write, or toggled afterwards by their author only."""

from __future__ import annotations

from django.db import transaction

from contexts.errors import Forbidden, Invalid
from contexts.models import Workspace
from contexts.tenancy.audit import Actor, audit_record
from memories.models import Memory


def memory_set_private(
    *, workspace: Workspace, memory: Memory, private: bool, actor: Actor
) -> Memory:
    """Make an entry private or public again. Only its author may: an owner hiding a
    colleague's entry from the team, or exposing a private one, is not a visibility
    change but a different act (forget, or asking the author)."""
    if memory.private == private:
        return memory
    if actor.user is None or memory.user_id != actor.user.pk:
        raise Forbidden("Only the author of a memory can change who sees it.", code="not_author")
    if private and memory.state_key:
        raise Invalid("A state entry cannot be private.", code="private_state_key")
    with transaction.atomic():
        Memory.objects.filter(pk=memory.pk, workspace=workspace).update(private=private)
        memory.private = private
        audit_record(
            actor=actor,
            workspace=workspace,
            action="memory.visibility",
            target=f"memory:{memory.pk}",
            detail={"private": private},
        )
    return memory
