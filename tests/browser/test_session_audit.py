"""Auditing a session in a real browser: why it was shown a memory, its filters,
and the workspace's stored originals beside what the model was offered.

The session is made by the real hook pipeline over HTTP, against the live server.
"""

from __future__ import annotations

import json
import re
import urllib.request
from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from contexts.models import AgentSession, CompressionRef
from memories import services
from memories.services import RememberInput
from tests.browser.conftest import log_in, screenshot

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def hook(live_url, acme, bob, make_key):
    key = make_key(bob, workspace=acme)

    def call(event: str, **payload):
        body = {"session_id": "cc-audit", "cwd": "/src/app", "hook_event_name": event, **payload}
        request = urllib.request.Request(
            f"{live_url}/api/v1/hooks/{event}",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            assert response.status == 200
            return json.loads(response.read())

    return call


def _imported(acme, text: str):
    """An entry from long ago: recall, not the new session's restore pack, brings it."""
    return services.memory_remember(
        workspace=acme,
        item=RememberInput(
            text=text, source="import", created_at=timezone.now() - timedelta(days=30)
        ),
    ).memory


def _session(hook):
    hook("session-start", source="startup")
    hook("user-prompt", prompt="how many times do payment webhooks retry?")
    hook("stop", last_assistant_message="Five times, with backoff.")
    hook("user-prompt", prompt="who cuts the release branch on Thursdays?")
    hook("stop", last_assistant_message="The release captain.")
    return AgentSession.objects.get(external_id="cc-audit")


def _in_view(page, selector: str) -> bool:
    return page.evaluate(
        "(s) => { const r = document.querySelector(s).getBoundingClientRect();"
        " return r.top >= 0 && r.top < window.innerHeight; }",
        selector,
    )


def test_why_a_session_was_shown_a_memory_from_the_memorys_page(page, acme, alice, hook):
    fact = _imported(acme, "The payments service retries webhooks 5 times with backoff.")
    for i in range(8):  # enough other entries that the page is long
        _imported(acme, f"Team note {i}: the release captain rotates every sprint, row {i}.")
    session = _session(hook)
    log_in(page, "alice", "alice-password")
    page.goto(f"/w/acme/memories/{fact.pk}/")
    history = page.locator("#access table.access")
    row = history.locator("tr", has=page.locator(".mark-injected"))
    assert "rank 1" in row.inner_text() and "webhooks" in row.inner_text()
    screenshot(page, "why-memory-access-history")

    row.get_by_role("link", name=re.compile(r"turn 1: memflow:recall")).click()
    page.wait_for_url(re.compile(rf"/sessions/{session.pk}/\?memory={fact.pk}#event-\d+$"))
    event_id = page.url.rsplit("#", 1)[1]
    assert _in_view(page, f"#{event_id}")  # the event, not the top of the page
    why = page.locator(f"#{event_id}-memory-{fact.pk}")
    assert "focus" in (why.get_attribute("class") or "")
    cells = why.locator("td").all_inner_texts()
    rank, score, dense, lexical, terms, retention = cells[:6]
    assert rank == "1" and float(score.split()[0]) > 0
    assert dense.endswith("· #1") and lexical.endswith("· #1")
    assert terms.split() == ["times", "payment", "webhooks", "retry"]
    assert 0 < float(retention) <= 1
    assert "lexical arm weighed" in page.locator(f"#{event_id} table.why caption").inner_text()
    # the turn the injection answered is the prompt's
    assert "turn 1" in page.locator(f"#{event_id} .event-head").inner_text()
    screenshot(page, "why-session-event")
    assert page.problems.found == []


def test_the_session_page_filters_by_type_turn_and_memory(page, acme, alice, hook):
    fact = _imported(acme, "The payments service retries webhooks 5 times with backoff.")
    session = _session(hook)
    log_in(page, "alice", "alice-password")
    page.goto(f"/w/acme/sessions/{session.pk}/")
    events = page.locator("#event-log li.event")
    everything = events.count()

    page.get_by_label("Event type").select_option("stop")
    page.wait_for_url(re.compile(r"kind=stop"))
    page.locator("#event-log [role=status]").get_by_text("2 events").wait_for()
    assert events.locator(".tag.kind").all_inner_texts() == ["stop", "stop"]

    page.get_by_label("Turn").fill("2")
    page.get_by_label("Turn").press("Enter")
    page.wait_for_url(re.compile(r"turn=2"))
    page.locator("#event-log [role=status]").get_by_text("1 event ").wait_for()
    assert events.locator("pre.event-text").all_inner_texts() == ["The release captain."]
    screenshot(page, "session-filter-turn")

    page.get_by_label("Event type").select_option("")
    page.get_by_label("Turn").fill("")
    page.get_by_label("Memory #").fill(str(fact.pk))
    page.get_by_label("Memory #").press("Enter")
    page.wait_for_url(re.compile(rf"memory={fact.pk}"))
    page.locator("#event-log [role=status]").get_by_text(f"naming memory #{fact.pk}").wait_for()
    assert events.locator(".tag.kind").all_inner_texts() == ["injection"]
    # htmx gives a row that was already on the page its old attributes until the
    # swap settles: the focus arrives a moment after the status line.
    expect(page.locator("tr.focus th a", has_text=f"#{fact.pk}")).to_have_count(1)
    screenshot(page, "session-filter-memory")

    page.get_by_role("link", name="Clear").click()
    page.wait_for_url(re.compile(rf"/sessions/{session.pk}/#events$"))
    assert events.count() == everything
    assert page.problems.found == []


def test_the_stored_originals_are_listed_and_open_beside_the_projection(page, acme, alice, hook):
    hook("session-start", source="startup")
    output = "\n".join(f"PASSED tests/test_mod_{i}.py::test_case_{i}" for i in range(600))
    output += "\nFAILED tests/test_mod_600.py::test_case_600 - AssertionError: 3 != 4"
    hook(
        "post-tool-use",
        tool_name="Bash",
        tool_input={"command": "pytest"},
        tool_response={"stdout": output, "stderr": "", "interrupted": False},
    )
    ref = CompressionRef.objects.get(workspace=acme)
    log_in(page, "alice", "alice-password")
    page.goto("/w/acme/compression/")
    row = page.locator("table.originals tbody tr")
    assert row.count() == 1
    text = row.inner_text()
    assert "Bash" in text and "cc-audit" in text and "text/plain" in text
    assert "1 original" in page.locator("#original-table").inner_text()
    screenshot(page, "originals-list")

    row.get_by_role("link", name=f"{ref.sha256[:16]}…", exact=True).click()
    page.wait_for_url(f"**/compression/{ref.sha256}/")
    assert "FAILED tests/test_mod_600.py" in page.locator(".original pre").inner_text()
    offered = page.locator("#projection pre").inner_text()
    assert ref.sha256 in offered and "FAILED tests/test_mod_600.py" in offered
    assert len(offered) < len(output) / 4
    screenshot(page, "original-beside-projection")

    # the original itself never renders as a page: it downloads
    with page.expect_download() as download:
        page.get_by_role("link", name="Download").click()
    with open(download.value.path(), "rb") as saved:
        assert saved.read() == output.encode()
    assert page.problems.found == []
