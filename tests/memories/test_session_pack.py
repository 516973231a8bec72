"""The restore pack a new session starts with: the directory's project first."""

from __future__ import annotations

from django.contrib.auth.models import User

from contexts.models import AgentSession, Workspace
from memories import selectors
from memories.models import Memory


def remembered(workspace: Workspace, user: User, cwd: str, texts: list[str]) -> None:
    session = AgentSession.objects.create(
        workspace=workspace, user=user, external_id=f"s-{cwd}", app="dsh", cwd=cwd
    )
    for text in texts:
        Memory.objects.create(workspace=workspace, user=user, text=text, session=session)


def test_it_gives_the_projects_own_trail_before_the_rest_of_the_workspace(
    acme: Workspace, alice: User
) -> None:
    remembered(acme, alice, "/src/heron/docs", ["Heron's docs build with mkdocs 1.6."])
    # A busy other project: more recent activity than a trail holds.
    remembered(acme, alice, "/src/osprey", [f"Osprey step {n} done." for n in range(30)])

    anywhere = selectors.session_pack(workspace=acme, viewer_id=alice.pk)
    here = selectors.session_pack(workspace=acme, viewer_id=alice.pk, project_root="/src/heron")

    assert "Heron's docs build with mkdocs 1.6." not in [m.text for m in anywhere.trail]
    texts = [m.text for m in here.trail]
    assert "Heron's docs build with mkdocs 1.6." in texts
    assert len(texts) == len(anywhere.trail), "the rest of the workspace fills the trail"
    # Not a prefix match on a sibling's name.
    sibling = selectors.session_pack(workspace=acme, viewer_id=alice.pk, project_root="/src/her")
    assert "Heron's docs build with mkdocs 1.6." not in [m.text for m in sibling.trail]
