"""The sessions list and the session page: what the model saw, and why."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from contexts.flowctx import services as flowctx_services
from contexts.models import AgentSession, SessionEvent
from tests.dashboard.stories import ESCAPED_SCRIPT, SCRIPT, session_story


def test_the_list_is_newest_first_and_paginated(acme, bob, as_user):
    now = timezone.now()
    AgentSession.objects.bulk_create(
        AgentSession(workspace=acme, external_id=f"s-{i:03}", app="codex") for i in range(55)
    )
    for session in AgentSession.objects.filter(workspace=acme):
        AgentSession.objects.filter(pk=session.pk).update(
            started_at=now - timedelta(minutes=int(session.external_id[2:]))
        )
    client = as_user(bob)
    first = client.get("/w/acme/sessions/").content.decode()
    assert first.index("s-000") < first.index("s-001") < first.index("s-049")
    assert "s-050" not in first and "page 1 of 2" in first
    second = client.get("/w/acme/sessions/?page=2").content.decode()
    assert "s-054" in second and "s-000" not in second


def test_each_session_shows_its_counts(acme, bob, as_user):
    story = session_story(acme)
    row = as_user(bob).get("/w/acme/sessions/").content.decode().split("<tbody>")[1]
    assert f"/w/acme/sessions/{story.session.pk}/" in row
    cells = [c.split("</td>")[0] for c in row.split("<td>")[1:]]
    assert cells[-3:] == ["2", "8", "1"]  # turns, events, injections


def test_an_empty_list_says_where_sessions_come_from(acme, bob, as_user):
    html = as_user(bob).get("/w/acme/sessions/").content.decode()
    assert "No sessions yet" in html and "hook endpoints" in html


def test_the_session_page_tells_what_the_model_saw_and_why(acme, bob, as_user):
    story = session_story(acme)
    html = as_user(bob).get(f"/w/acme/sessions/{story.session.pk}/").content.decode()
    # events in order
    kinds = ["session-start", "user-prompt", "injection", "post-tool-use", "stop", "session-end"]
    positions = [html.index(f'<span class="tag kind">{k}</span>') for k in kinds]
    assert positions == sorted(positions)
    # the injection's blocks, why each was given, and the ids with their ledger marks
    assert "memflow:recall" in html and "memories recalled for this prompt" in html
    assert "context:identity" in html and "system-prompt section" in html
    ids = html.split('<p class="ids">')[1].split("</p>")[0]
    used, unused = ids.split(f"#{story.unused.pk}</a>")
    assert f"#{story.used.pk}</a>" in used and "mark-recalled" in used
    assert "mark-injected" in unused and "mark-recalled" not in unused
    # refs, the summary tree (the leaves under the node that condensed them), the scratchpad
    assert story.ref.sha256[:16] in html and "Show original" in html
    tree = html.split('id="summaries"')[1]
    assert tree.index("d1-1-2") < tree.index("d0-1-1") < tree.index("d0-2-2")
    assert tree.split("d1-1-2")[1].split("</li>")[0].count('<ul class="tree">') == 1
    assert "todo: verify" in html and "Version 1" in html


def test_agent_text_is_inert_everywhere_on_the_session_page(acme, bob, as_user):
    story = session_story(acme)
    html = as_user(bob).get(f"/w/acme/sessions/{story.session.pk}/").content.decode()
    assert SCRIPT not in html
    # the prompt, the injected block, the ledger's memory text, the note, the scratchpad
    assert html.count(ESCAPED_SCRIPT) >= 5


def test_a_compression_ref_expands_in_place(acme, bob, as_user):
    story = session_story(acme)
    client = as_user(bob)
    url = f"/w/acme/compression/{story.ref.sha256}/"
    fragment = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<div class="original">')
    assert "<html" not in fragment and SCRIPT not in fragment
    assert "line 399: PASSED test_399 " + ESCAPED_SCRIPT in fragment
    page = client.get(url).content.decode()
    assert "<html" in page and "Stored original" in page
    download = client.get(url + "?download=1")
    assert download["Content-Type"] == "text/plain; charset=utf-8"  # inert text keeps its type
    assert download["Content-Disposition"].startswith("attachment")
    assert "sandbox" in download["Content-Security-Policy"]
    assert download.content == story.original.encode()


def test_binary_originals_are_shown_as_a_hex_dump(acme, bob, as_user):
    ref = flowctx_services.compression_store(workspace=acme, content=b"\xff\xfe<b>\x00\x01").ref
    html = as_user(bob).get(f"/w/acme/compression/{ref.sha256}/").content.decode()
    assert "not UTF-8 text" in html and "ff fe 3c 62 3e 00 01" in html


def test_another_workspaces_session_or_ref_is_not_found(acme, evil, bob, as_user):
    theirs = session_story(evil, external_id="their-session")
    client = as_user(bob)
    assert client.get(f"/w/acme/sessions/{theirs.session.pk}/").status_code == 404
    assert client.get(f"/w/acme/compression/{theirs.ref.sha256}/").status_code == 404
    assert client.get("/w/acme/compression/nothex/").status_code == 404


def test_an_outsider_gets_404_for_every_method(acme, mallory, as_user):
    story = session_story(acme)
    client = as_user(mallory)
    for url in (
        f"/w/acme/sessions/{story.session.pk}/",
        f"/w/acme/compression/{story.ref.sha256}/",
    ):
        for method in ("get", "post", "put", "delete"):
            assert getattr(client, method)(url).status_code == 404, (method, url)


def test_the_pages_take_no_writes(acme, victor, bob, as_user):
    story = session_story(acme)
    for user in (victor, bob):
        response = as_user(user).post(f"/w/acme/sessions/{story.session.pk}/")
        assert response.status_code == 405


def test_events_are_paginated_and_the_log_swaps_alone(acme, bob, as_user):
    session = AgentSession.objects.create(workspace=acme, external_id="long")
    SessionEvent.objects.bulk_create(
        SessionEvent(session=session, kind="user-prompt", payload={"prompt": f"prompt {i:03}"})
        for i in range(130)
    )
    client = as_user(bob)
    first = client.get(f"/w/acme/sessions/{session.pk}/").content.decode()
    assert "prompt 099" in first and "prompt 100" not in first
    second = client.get(
        f"/w/acme/sessions/{session.pk}/?page=2", HTTP_HX_REQUEST="true"
    ).content.decode()
    assert second.lstrip().startswith('<div id="event-log">')
    assert "prompt 100" in second and "prompt 129" in second and "prompt 099" not in second
    assert '<ol class="events" start="101">' in second


def test_an_empty_session_says_so(acme, bob, as_user):
    session = AgentSession.objects.create(workspace=acme, external_id="quiet")
    html = as_user(bob).get(f"/w/acme/sessions/{session.pk}/").content.decode()
    assert "This session has no events." in html
    assert "No memory was injected into this session." in html
    assert "No tool result of this session was shortened." in html
    assert "No turns of this session have been folded" in html
    assert "never wrote to its scratchpad" in html
