"""Who changed memory #N and when, forget → restore, settling a conflict
cluster: as a person does it in the dashboard, in a real browser."""

from __future__ import annotations

import re

import pytest

from contexts.models import AuditEvent
from memories import services
from memories.models import Memory
from tests.browser.conftest import log_in, screenshot
from tests.dashboard.stories import remember

pytestmark = pytest.mark.django_db(transaction=True)


def test_who_changed_memory_n_and_when(page, acme, alice, bob):
    memory = remember(acme, "The staging database is db-3.internal")
    log_in(page, "bob", "bob-password")
    page.goto(f"/w/acme/memories/{memory.pk}/")
    page.get_by_label("Text").fill("The staging database is db-4.internal")
    page.get_by_role("button", name="Save correction").click()
    page.get_by_text("Saved; the memory was re-embedded.").wait_for()
    history = page.locator("#audit")
    row = history.locator("tbody tr").first
    assert "bob" in row.locator(".audit-who").inner_text()
    assert "memory.edit" in row.inner_text() and "Dashboard" in row.inner_text()
    row.get_by_text("Before / after").click()
    assert row.locator(".audit-before").inner_text() == "The staging database is db-3.internal"
    assert row.locator(".audit-after").inner_text() == "The staging database is db-4.internal"
    when = AuditEvent.objects.get(action="memory.edit").at.strftime("%Y-%m-%d %H:%M")
    assert when in row.inner_text()
    screenshot(page, "audit-memory-history")
    # the workspace's Activity page answers the same, filtered to bob's edits
    page.get_by_role("link", name="Activity").click()
    page.get_by_label("Who").select_option("bob")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r".*user=bob.*"))
    rows = page.locator("#activity-table tbody tr")
    rows.first.wait_for()
    assert rows.count() >= 1
    assert f"#{memory.pk}" in rows.first.inner_text()
    screenshot(page, "audit-activity")
    assert page.problems.found == []


def test_forget_then_restore(page, acme, bob):
    memory = remember(acme, "Deploys need two approvals")
    log_in(page, "bob", "bob-password")
    page.goto(f"/w/acme/memories/{memory.pk}/")
    page.get_by_label("Why").fill("we need only one now")
    page.get_by_role("button", name="Forget").click()
    tomb = page.locator("#tombstone")
    tomb.wait_for()
    assert "we need only one now" in tomb.inner_text() and "bob" in tomb.inner_text()
    screenshot(page, "audit-forgotten-tombstone")
    page.goto("/w/acme/memories/")
    assert "Deploys need two approvals" not in page.locator("main").inner_text()
    page.goto(f"/w/acme/memories/{memory.pk}/")
    page.get_by_role("button", name="Restore").click()
    page.get_by_text(f"Memory #{memory.pk} restored.").wait_for()
    assert page.locator("#tombstone").count() == 0
    assert Memory.objects.get(pk=memory.pk).is_current
    actions = page.locator("#audit tbody tr code").all_inner_texts()
    assert actions[:2] == ["memory.restore", "memory.forget"]
    screenshot(page, "audit-restored")
    assert page.problems.found == []


def test_resolving_a_conflict_cluster(page, acme, bob):
    first = remember(acme, "The release branch is cut every Monday morning.")
    others = [
        services.memory_update(workspace=acme, memory=remember(acme, f"Unrelated {i}"), text=t)
        for i, t in enumerate(
            [
                "The release branch gets cut every Monday morning.",
                "The release branch is cut each Monday morning.",
            ]
        )
    ]
    log_in(page, "bob", "bob-password")
    page.goto("/w/acme/")
    page.get_by_role("link", name="Open the queue and settle these").click()
    page.wait_for_url("**/w/acme/triage/")
    clusters = page.locator("article.cluster")
    clusters.first.wait_for()
    assert clusters.count() == 1
    cluster = clusters.first
    assert all(f"#{m.pk}" in cluster.inner_text() for m in [first, *others])
    screenshot(page, "triage-cluster")
    cluster.get_by_label("Consolidate into one conclusion").check()
    cluster.get_by_role("textbox", name="Conclusion").fill(
        "Release branches are cut on Monday mornings."
    )
    cluster.get_by_role("button", name="Settle").click()
    page.get_by_text("No conflicting memories are waiting.").wait_for()
    conclusion = Memory.objects.get(source="consolidation")
    assert conclusion.text == "Release branches are cut on Monday mornings."
    screenshot(page, "triage-settled")
    assert page.problems.found == []
