"""The restore pack a new session starts with: its own project's trail and what holds
across the workspace, never another project's."""

from __future__ import annotations

from django.contrib.auth.models import User

from contexts.models import AgentSession, Workspace
from memories import selectors
from memories.models import Memory


def remembered(workspace: Workspace, user: User, project: str, texts: list[str]) -> None:
    session = AgentSession.objects.create(
        workspace=workspace,
        user=user,
        external_id=f"s-{project}",
        app="dsh",
        cwd=f"{project}/docs" if project else "/",
        project=project,
    )
    for text in texts:
        Memory.objects.create(
            workspace=workspace, user=user, text=text, session=session, project=project
        )


def test_it_gives_the_projects_own_trail_and_the_workspaces_never_anothers(
    acme: Workspace, alice: User
) -> None:
    remembered(acme, alice, "/src/heron", ["Heron's docs build with mkdocs 1.6."])
    remembered(acme, alice, "", ["Every repository signs its commits."])
    # A busy other project: more recent activity than a trail holds.
    remembered(acme, alice, "/src/osprey", [f"Osprey step {n} done." for n in range(30)])

    anywhere = selectors.session_pack(workspace=acme, viewer_id=alice.pk)
    here = selectors.session_pack(workspace=acme, viewer_id=alice.pk, project="/src/heron")

    assert "Heron's docs build with mkdocs 1.6." not in [m.text for m in anywhere.trail]
    texts = [m.text for m in here.trail]
    assert "Heron's docs build with mkdocs 1.6." in texts
    assert "Every repository signs its commits." in texts
    assert not [t for t in texts if t.startswith("Osprey")]
    # Not a prefix match on a sibling's name.
    sibling = selectors.session_pack(workspace=acme, viewer_id=alice.pk, project="/src/her")
    assert "Heron's docs build with mkdocs 1.6." not in [m.text for m in sibling.trail]
