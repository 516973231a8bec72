"""The dashboard's charts in a real browser: axes a person can read, ranges to pick,
and a name for each chart that a screen reader announces."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from contexts.models import AgentSession
from memories import services
from memories.models import Memory
from tests.browser.conftest import PHONE, log_in, screenshot
from tests.dashboard.stories import session_story

pytestmark = pytest.mark.django_db(transaction=True)


def _axis_labels(page, chart_id: str, group: str) -> list[str]:
    return page.locator(f"svg:has(#{chart_id}-title) .{group} text").all_text_contents()


def _busy_ledger(acme) -> None:
    """200 ids injected today and one of them used: a 0.5 % day."""
    session = AgentSession.objects.create(workspace=acme, external_id="busy", app="codex")
    ids = list(range(10_001, 10_201))
    services.ledger_record(workspace=acme, session=session, memory_ids=ids, kind="injected")
    services.ledger_record(workspace=acme, session=session, memory_ids=ids[:1], kind="recalled")


def test_the_ledger_rate_reads_at_its_own_scale_and_the_range_follows(page, acme, alice):
    session_story(acme)
    _busy_ledger(acme)
    log_in(page, "alice", "alice-password")
    page.goto("/w/acme/ledger/?compartment=ops")

    rate = page.get_by_role("img", name="Share of the day's injected pairs later used")
    assert rate.is_visible()
    # 2 used of 202 injected today: about 1 %, so the axis stops at 1 %, not 100 %
    assert _axis_labels(page, "rate-chart", "y-labels")[-1] == "1.00%"
    assert page.get_by_role("img", name="Use rate by the memory's source").is_visible()
    screenshot(page, "charts-ledger-30")

    page.get_by_role("navigation", name="Time range").get_by_role("link", name="7 days").click()
    page.wait_for_url("**days=7**")
    assert "compartment=ops" in page.url  # the other parameters ride along
    assert page.get_by_role("heading", name="Over the last 7 days").is_visible()
    assert page.locator("svg:has(#injected-chart-title) .bars rect").count() == 7
    current = page.get_by_role("navigation", name="Time range").locator("[aria-current]")
    assert current.inner_text() == "7 days"

    # the hottest list and the never-used list name different ids
    hottest = page.locator("section", has=page.get_by_role("heading", name="Hottest ids"))
    never = page.locator("section", has=page.get_by_role("heading", name="Never used"))
    hot_ids = set(hottest.locator("tbody td:first-child").all_inner_texts())
    never_ids = set(never.locator("tbody td:first-child").all_inner_texts())
    assert hot_ids and never_ids and not hot_ids & never_ids
    screenshot(page, "charts-ledger-7")

    page.set_viewport_size(PHONE)
    page.reload()
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 1
    screenshot(page, "charts-ledger-phone")
    assert page.problems.found == []


def test_the_overview_growth_over_90_days(page, acme, alice):
    story = session_story(acme)
    Memory.objects.filter(pk=story.unused.pk).update(created_at=timezone.now() - timedelta(days=60))
    log_in(page, "alice", "alice-password")
    page.get_by_role("navigation", name="Time range").get_by_role("link", name="90 days").click()
    page.wait_for_url("**days=90**")
    total = page.get_by_role("img", name="Memories in all, by day")
    assert total.is_visible()
    assert page.locator("svg:has(#total-chart-title) .bars rect").count() == 90
    # the count axis reads 0, 1, 2: two memories, one written 60 days ago
    assert _axis_labels(page, "total-chart", "y-labels") == ["0", "1", "2"]
    assert len(_axis_labels(page, "total-chart", "x-labels")) >= 4
    screenshot(page, "charts-overview-90")
    assert page.problems.found == []


def test_a_memory_decay_curve_with_its_accesses(page, acme, alice):
    story = session_story(acme)
    Memory.objects.filter(pk=story.used.pk).update(
        last_accessed=timezone.now() - timedelta(days=40), access_count=2
    )
    log_in(page, "alice", "alice-password")
    page.goto(f"/w/acme/memories/{story.used.pk}/")
    chart = page.get_by_role("img", name="Retention over time")
    assert chart.is_visible()
    desc = page.locator("#decay-desc").text_content()
    assert "falls below the cleanup threshold" in desc and "2 ledger marks" in desc
    assert page.locator("#decay .marks circle").count() == 2
    assert _axis_labels(page, "decay", "y-labels") == ["0.00", "0.25", "0.50", "0.75", "1.00"]
    screenshot(page, "charts-decay")
    assert page.problems.found == []


def test_the_summary_tree_is_drawn_over_the_turns(page, acme, alice):
    story = session_story(acme)
    log_in(page, "alice", "alice-password")
    page.goto(f"/w/acme/sessions/{story.session.pk}/")
    drawn = page.get_by_role("img", name="The summary tree drawn over the session's turns")
    drawn.scroll_into_view_if_needed()
    assert drawn.is_visible()
    boxes = page.locator("#summary-chart .nodes rect")
    assert boxes.count() == 3
    top, leaf = (boxes.nth(i).bounding_box() for i in (0, 1))
    assert top is not None and leaf is not None
    assert top["y"] + top["height"] <= leaf["y"]  # the condensing note sits above
    assert top["width"] > 1.9 * leaf["width"]  # and spans both turns
    assert page.locator("#summary-chart .edges line").count() == 2
    screenshot(page, "charts-summary-tree")
    assert page.problems.found == []
