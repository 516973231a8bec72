"""The sessions list: found by id or directory, by app, open or ended; filters kept across pages."""

from __future__ import annotations

from django.utils import timezone

from contexts.models import AgentSession
from tests.dashboard.stories import ESCAPED_SCRIPT, SCRIPT


def make(workspace, external_id, *, app="claude-code", cwd="/src/app", ended=False):
    return AgentSession.objects.create(
        workspace=workspace,
        external_id=external_id,
        app=app,
        cwd=cwd,
        ended_at=timezone.now() if ended else None,
    )


def test_sessions_are_found_by_id_directory_app_and_state(acme, victor, as_user):
    make(acme, "alpha-1", cwd="/src/rocket")
    make(acme, "beta-2", app="codex", cwd="/src/lander", ended=True)
    make(acme, f"gamma-3 {SCRIPT}", app="codex", cwd="/src/rocket/engine")
    client = as_user(victor)

    def listed(qs: str) -> str:
        return client.get(f"/w/acme/sessions/?{qs}").content.decode()

    html = listed("")
    assert '<option value="codex">codex</option>' in html and ESCAPED_SCRIPT in html
    assert SCRIPT not in html
    rocket = listed("q=ROCKET")
    assert "alpha-1" in rocket and "gamma-3" in rocket and "beta-2" not in rocket
    assert "beta-2" in listed("q=beta") and "alpha-1" not in listed("q=beta")
    codex = listed("app=codex")
    assert "beta-2" in codex and "gamma-3" in codex and "alpha-1" not in codex
    assert '<option value="codex" selected>' in codex
    ended = listed("state=ended")
    assert "beta-2" in ended and "alpha-1" not in ended and "gamma-3" not in ended
    assert "beta-2" not in listed("state=open&app=codex")
    assert "No session matches these filters." in listed("q=nowhere")


def test_typing_swaps_the_table_and_pages_keep_the_filters(acme, bob, as_user):
    for i in range(55):
        make(acme, f"run-{i:02}", app="codex")
    make(acme, "other", app="claude-code")
    client = as_user(bob)
    swapped = client.get("/w/acme/sessions/?app=codex", HTTP_HX_REQUEST="true").content.decode()
    assert swapped.lstrip().startswith('<div id="session-table">')
    assert "page 1 of 2" in swapped and "(55 in all)" in swapped
    assert 'hx-get="?app=codex&amp;page=2"' in swapped
    second = client.get("/w/acme/sessions/?app=codex&page=2").content.decode()
    assert "run-00" in second and "other" not in second


def test_an_outsider_gets_404(acme, mallory, as_user):
    make(acme, "alpha-1")
    assert as_user(mallory).get("/w/acme/sessions/?q=alpha").status_code == 404
