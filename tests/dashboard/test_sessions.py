"""The sessions list and the session page: what the model saw, and why."""

# The pages print real multiplication signs, and the tests read what they print.
# ruff: noqa: RUF001

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from contexts.flowctx import services as flowctx_services
from contexts.models import AgentSession, CompressionRef, SessionEvent
from memories import services
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
    drawn, tree = html.split('id="summaries"')[1].split('<ul class="tree">', 1)
    assert tree.index("d1-1-2") < tree.index("d0-1-1") < tree.index("d0-2-2")
    assert tree.split("d1-1-2")[1].split("</li>")[0].count('<ul class="tree">') == 1
    # drawn too: the condensing note's box above its two leaves, a line down to each
    boxes = drawn.split('<g class="nodes">')[1].split("</g>")[0]
    assert boxes.index("d1-1-2") < boxes.index("d0-1-1") < boxes.index("d0-2-2")
    assert 'class="active"' in boxes.split("d0-1-1")[0]  # only the top note is active
    assert drawn.split('<g class="edges">')[1].split("</g>")[0].count("<line") == 2
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


# --- marks, filters, anchors, originals ------------------------------------------------------


def test_the_ledger_counts_repeated_marks_in_one_badge(acme, bob, as_user):
    story = session_story(acme)
    for _ in range(2):  # given again after a compaction, twice
        services.ledger_record(
            workspace=acme, session=story.session, memory_ids=[story.used.pk], kind="injected"
        )
    html = as_user(bob).get(f"/w/acme/sessions/{story.session.pk}/").content.decode()
    ledger = html.split('id="ledger"')[1].split("</section>")[0]
    row = ledger.split(f"#{story.used.pk}</a>")[1].split("</tr>")[0]
    assert ">injected ×3</span>" in row and ">recalled</span>" in row
    assert row.count("mark-injected") == 1


def test_a_bad_filter_is_named_and_the_others_still_apply(acme, bob, as_user):
    story = session_story(acme)
    client = as_user(bob)
    url = f"/w/acme/sessions/{story.session.pk}/"
    html = client.get(url, {"kind": "stop", "turn": "zero"}).content.decode()
    assert "Turn: Enter a whole number." in html
    log = html.split('id="event-log"')[1]
    assert '<span class="tag kind">stop</span>' in log
    assert '<span class="tag kind">user-prompt</span>' not in log
    # the filtered log is swapped alone, each event with its anchor
    fragment = client.get(url, {"memory": story.used.pk}, HTTP_HX_REQUEST="true").content.decode()
    assert fragment.lstrip().startswith('<div id="event-log">')
    injection = SessionEvent.objects.get(session=story.session, kind="injection")
    assert f'id="event-{injection.pk}"' in fragment and fragment.count('class="event ') == 1
    assert f"naming memory #{story.used.pk}" in fragment


def test_the_originals_page_lists_this_workspaces_only(acme, evil, bob, mallory, as_user):
    story = session_story(acme)
    theirs = flowctx_services.compression_store(workspace=evil, content=b"their output").ref
    pinned = flowctx_services.compression_store(
        workspace=acme, content=b"\x00binary", content_type="application/octet-stream"
    ).ref
    CompressionRef.objects.filter(pk=pinned.pk).update(pinned=True)
    html = as_user(bob).get("/w/acme/compression/").content.decode()
    table = html.split("<tbody>")[1].split("</tbody>")[0]
    assert table.count("<tr>") == 2 and "2 originals" in html
    assert f"/w/acme/compression/{story.ref.sha256}/" in table
    assert f"/w/acme/compression/{story.ref.sha256}/?download=1" in table
    assert f"/w/acme/sessions/{story.session.pk}/#ref-{story.ref.sha256}" in table
    assert "application/octet-stream" in table and ">pinned<" in table
    assert theirs.sha256 not in html
    assert as_user(mallory).get("/w/acme/compression/").status_code == 404


def test_the_originals_page_is_paginated(acme, bob, as_user):
    for i in range(55):
        flowctx_services.compression_store(workspace=acme, content=f"output {i}".encode())
    client = as_user(bob)
    first = client.get("/w/acme/compression/").content.decode()
    assert first.split("<tbody>")[1].count("<tr>") == 50 and "page 1 of 2" in first
    second = client.get("/w/acme/compression/?page=2", HTTP_HX_REQUEST="true").content.decode()
    assert second.lstrip().startswith('<div id="original-table">')
    assert second.split("<tbody>")[1].count("<tr>") == 5
