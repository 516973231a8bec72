"""A memory's page: its access history from the ledger, beside its use counts."""

# The pages print real minus and multiplication signs, and the tests read what they print.
# ruff: noqa: RUF001

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from contexts.models import AgentSession, SessionEvent
from memories import decay, services
from memories.models import Memory
from tests.dashboard.stories import ESCAPED_SCRIPT, SCRIPT, remember, session_story


def test_the_access_history_says_when_and_in_which_session(acme, victor, as_user):
    story = session_story(acme)
    other = AgentSession.objects.create(workspace=acme, external_id=f"sess-2 {SCRIPT}", app="codex")
    services.ledger_record(
        workspace=acme, session=other, memory_ids=[story.used.pk], kind="injected"
    )
    services.ledger_record(
        workspace=acme, session=other, memory_ids=[story.used.pk], kind="expanded"
    )
    Memory.objects.filter(pk=story.used.pk).update(access_count=3)
    html = as_user(victor).get(f"/w/acme/memories/{story.used.pk}/").content.decode()
    section = html.split('id="access"')[1].split("</section>")[0]
    assert "Accessed 3 times" in section
    assert (
        "injected 2×, expanded 1×, recalled 1×, superseded 0×, cited 0×, across 2 sessions"
        in section
    )
    assert "used after injection in 2 of them" in section
    rows = section.split("<tbody>")[1].split("<tr>")[1:]
    assert len(rows) == 4
    assert "expanded" in rows[0] and f"/w/acme/sessions/{other.pk}/" in rows[0]  # newest first
    assert "codex" in rows[0] and ESCAPED_SCRIPT in rows[0]
    assert "injected" in rows[-1] and f"/w/acme/sessions/{story.session.pk}/" in rows[-1]
    assert SCRIPT not in html


def test_a_memory_no_session_saw_says_so(acme, bob, as_user):
    memory = remember(acme, "Never shown to a model")
    html = as_user(bob).get(f"/w/acme/memories/{memory.pk}/").content.decode()
    assert "No session has been shown this memory yet" in html
    assert "Accessed 0 times" in html


def test_the_history_is_paginated(acme, bob, as_user):
    memory = remember(acme, "Shown in many sessions")
    for i in range(60):
        session = AgentSession.objects.create(workspace=acme, external_id=f"s-{i:02}")
        services.ledger_record(
            workspace=acme, session=session, memory_ids=[memory.pk], kind="injected"
        )
    client = as_user(bob)
    first = client.get(f"/w/acme/memories/{memory.pk}/").content.decode()
    assert "page 1 of 2" in first and "s-59" in first and "s-00" not in first
    assert "s-00" in client.get(f"/w/acme/memories/{memory.pk}/?page=2").content.decode()


def test_another_workspaces_user_gets_404(acme, evil, mallory, as_user):
    story = session_story(acme)
    client = as_user(mallory)
    assert client.get(f"/w/acme/memories/{story.used.pk}/").status_code == 404
    # her own workspace does not reach acme's memory either
    assert client.get(f"/w/evil/memories/{story.used.pk}/").status_code == 404


def test_an_injection_in_the_history_links_to_its_event_and_says_why(
    acme, bob, make_key, api, as_user
):
    fact = services.memory_remember(
        workspace=acme,
        item=services.RememberInput(
            text="The payments service retries webhooks 5 times with backoff.",
            source="import",
            created_at=timezone.now() - timedelta(days=30),
        ),
    ).memory
    hooks = api(make_key(bob, workspace=acme))
    for event, extra in (
        ("session-start", {"source": "startup"}),
        ("user-prompt", {"prompt": "how many times do payment webhooks retry?"}),
    ):
        body = {"session_id": "cc-why", "hook_event_name": event, **extra}
        assert hooks.post(f"/api/v1/hooks/{event}", body, format="json").status_code == 200
    session = AgentSession.objects.get(external_id="cc-why")
    injection = SessionEvent.objects.get(
        session=session, kind="injection", payload__event="user-prompt"
    )
    html = as_user(bob).get(f"/w/acme/memories/{fact.pk}/").content.decode()
    row = html.split('id="access"')[1].split("<tbody>")[1].split("</tr>")[0]
    link = f"/w/acme/sessions/{session.pk}/?memory={fact.pk}#event-{injection.pk}"
    assert f'href="{link}"' in row and "turn 1: <code>memflow:recall</code>" in row
    assert "rank 1 · score " in row and "(#1)" in row
    terms = ("times", "payment", "webhooks", "retry")  # `payments`, `retries` through their stems
    assert " ".join(f'<code class="term">{t}</code>' for t in terms) in row
    # the link's page holds that event, with the memory's row marked
    page = as_user(bob).get(link.split("#")[0]).content.decode()
    assert f'id="event-{injection.pk}"' in page
    assert f'id="event-{injection.pk}-memory-{fact.pk}" class="focus"' in page


def test_the_decay_chart_is_the_ranking_formula_with_the_ledger_marks(acme, victor, as_user):
    from contexts.tenancy.knobs import knob
    from memories.decay import retention

    story = session_story(acme)
    month_ago = timezone.now() - timedelta(days=30)
    Memory.objects.filter(pk=story.used.pk).update(last_accessed=month_ago, access_count=1)
    memory = Memory.objects.get(pk=story.used.pk)
    html = as_user(victor).get(f"/w/acme/memories/{memory.pk}/").content.decode()
    chart = html.split('id="decay"')[1].split("</figure>")[0]
    # injected, then recalled: two marks on the time axis, each named
    assert chart.count("<circle") == 2
    assert 'class="mark-injected"' in chart and 'class="mark-recalled"' in chart
    # the solid line ends now, at the retention recall ranks it with
    top, bottom = 10, 150 - 22
    last_y = float(chart.split('class="curve" points="')[1].split('"')[0].split()[-1].split(",")[1])
    drawn = (bottom - last_y) / (bottom - top)
    expected = retention(
        last_accessed=month_ago, access_count=1, source=memory.source, now=timezone.now(),
        base_tau_days=float(knob(acme, "decay_tau_days")),
    )  # fmt: skip
    assert abs(drawn - expected) < 0.01
    assert 'class="threshold"' in chart and "falls below the cleanup threshold" in chart
    Memory.objects.filter(pk=memory.pk).update(pinned=True)
    html = as_user(victor).get(f"/w/acme/memories/{memory.pk}/").content.decode()
    chart = html.split('id="decay"')[1].split("</figure>")[0]
    assert 'class="threshold"' not in chart and "Pinned: the cleanup never removes it" in chart


@pytest.mark.parametrize(
    ("source", "shown", "removed"),
    [("hook", "0.10", True), ("consolidation", "0.10", True), ("model", "0.03", False),
     ("import", "0.03", False)],
)  # fmt: skip
def test_the_page_shows_the_threshold_the_cleanup_holds_its_source_to(
    acme, victor, as_user, source, shown, removed
):
    """At retention 0.06, between the two thresholds (0.1, and 0.1/3 for kept memories)."""
    memory = remember(acme, "The nightly export writes to the cold bucket.")
    now = timezone.now()
    faded = decay.falls_below(last_accessed=now, access_count=0, source=source, threshold=0.06)
    assert faded is not None
    Memory.objects.filter(pk=memory.pk).update(source=source, last_accessed=now - (faded - now))
    html = as_user(victor).get(f"/w/acme/memories/{memory.pk}/").content.decode()
    chart = html.split('id="decay"')[1].split("</figure>")[0]
    said = "fell below" if removed else "If nobody uses it, it falls below"
    assert f"{said} the cleanup threshold {shown} around" in chart
    candidates = {i for i, _, _ in services.memory_cleanup(workspace=acme).candidates}
    assert (memory.pk in candidates) is removed
