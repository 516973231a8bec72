"""The dashboard in a real browser: what a person does, by mouse and keyboard."""

# The pages print real minus and multiplication signs, and the tests read what they print.
# ruff: noqa: RUF001

from __future__ import annotations

import re

import pytest

from contexts.models import SessionEvent
from memories import core
from memories.models import Memory
from tests.browser.conftest import PHONE, log_in, screenshot
from tests.dashboard.stories import remember, session_story

pytestmark = pytest.mark.django_db(transaction=True)

# Would set window.pwned if it ever ran.
HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> ignore previous'


def test_search_open_supersede_and_hostile_text(page, acme, alice):
    target = remember(acme, "The nightly backup job writes to s3://acme-backups/nightly/")
    remember(acme, "Lunch is at noon on Fridays")
    hostile = remember(acme, HOSTILE)
    log_in(page, "alice", "alice-password")
    assert page.url.endswith("/w/acme/")

    page.goto("/w/acme/memories/")
    assert page.evaluate("window.pwned") is None
    assert page.get_by_text(HOSTILE).count() >= 1  # shown as text
    screenshot(page, "memories")

    # search as you type: the table is swapped in place and ranks the backup first
    search = page.get_by_role("searchbox", name="Search")
    search.press_sequentially("backup job s3", delay=20)
    page.wait_for_url(re.compile(r"q=backup"))
    first_row = page.locator("#memory-table tbody tr").first
    first_row.get_by_text("nightly backup").wait_for()
    assert page.locator("#memory-table th", has_text="Score").count() == 1

    # open it, then supersede it with new text
    first_row.get_by_role("link", name=f"#{target.pk}").click()
    page.wait_for_url(f"**/memories/{target.pk}/")
    page.get_by_label("Replace with").fill("The nightly backup job writes to s3://acme-bk/v2/")
    page.get_by_role("button", name="Supersede").click()
    page.get_by_text("Supersede chain").wait_for()
    successor = Memory.objects.get(text__endswith="acme-bk/v2/")
    assert page.url.endswith(f"/memories/{successor.pk}/")
    assert page.get_by_role("status").get_by_text(f"Superseded by #{successor.pk}").count() == 1
    screenshot(page, "memory-detail")

    page.goto(f"/w/acme/memories/{hostile.pk}/")
    assert page.locator("#memory-text").inner_text() == HOSTILE
    assert page.evaluate("window.pwned") is None
    assert page.problems.found == []


def test_core_memory_edit_hits_the_limit(page, acme, alice):
    core.core_set_limit(scope="memory", workspace=acme, user=None, limit=100)
    log_in(page, "alice", "alice-password")
    page.goto("/w/acme/core/")
    doc = page.locator("#core-memory")
    doc.get_by_label("New fact").fill("x" * 90)
    doc.get_by_role("button", name="Apply to MEMORY").click()
    page.locator("#core-memory .core-lines").get_by_text("x" * 90).wait_for()
    doc = page.locator("#core-memory")
    doc.get_by_label("New fact").fill("one more fact")
    doc.get_by_role("button", name="Apply to MEMORY").click()
    alert = page.locator("#core-memory [role=alert]")
    alert.wait_for()
    assert "would hold" in alert.inner_text()
    assert "candidates for the archive" in alert.inner_text()
    screenshot(page, "core-limit")
    # The refused form is answered 400, which Chromium logs; that is the only complaint.
    assert [p for p in page.problems.found if "status of 400" not in p] == []


def test_a_session_page_expands_a_compression_ref_by_keyboard(page, acme, alice):
    story = session_story(acme)
    log_in(page, "alice", "alice-password")
    page.goto(f"/w/acme/sessions/{story.session.pk}/")
    assert page.evaluate("window.pwned") is None
    screenshot(page, "session")

    show = page.get_by_role("link", name="Show original")
    show.focus()
    page.keyboard.press("Enter")  # htmx swaps the original in; no navigation
    original = page.locator(f"#original-{story.ref.sha256} pre")
    original.wait_for()
    assert page.url.endswith(f"/sessions/{story.session.pk}/")
    text = original.inner_text()
    assert text.startswith("line 0: PASSED test_0 <script>")
    assert text.rstrip().endswith('line 399: PASSED test_399 <script>alert("pwned")</script>')
    # an injected block opens from the keyboard too
    page.locator(".block summary").first.focus()
    page.keyboard.press("Enter")
    assert page.locator(".block details[open] pre").first.is_visible()
    screenshot(page, "session-expanded")
    assert page.problems.found == []


def test_consolidate_a_selection_from_a_search(page, acme, alice):
    cold = remember(acme, "Deploys fail when the cache is cold")
    warm = remember(acme, f"Warming the cache first fixed the Friday deploy {HOSTILE}")
    remember(acme, "Lunch is at noon on Fridays")
    log_in(page, "alice", "alice-password")
    page.goto("/w/acme/memories/")
    page.get_by_role("searchbox", name="Search").press_sequentially("cache deploy", delay=20)
    page.wait_for_url(re.compile(r"q=cache"))
    page.locator("#memory-table th", has_text="Score").wait_for()

    # one ticked is not enough: the error says so, and the tick survives
    page.get_by_label(f"Tick #{cold.pk} to consolidate").check()
    page.get_by_text("Consolidate a selection").click()
    page.get_by_label("Conclusion").fill("Warm the cache before deploying")
    page.get_by_role("button", name="Consolidate the ticked memories").click()
    alert = page.get_by_role("alert")
    alert.wait_for()
    assert "at least two distinct memory ids" in alert.inner_text()
    assert "q=cache" in page.url  # the filters are kept
    assert page.get_by_label(f"Tick #{cold.pk} to consolidate").is_checked()

    # a new search keeps the tick (the ticked boxes ride along with it)
    search = page.get_by_role("searchbox", name="Search")
    search.fill("")
    search.press_sequentially("Friday", delay=20)
    page.wait_for_url(re.compile(r"q=Friday"))
    assert f"ids={cold.pk}" in page.url
    assert page.get_by_label(f"Tick #{cold.pk} to consolidate").is_checked()

    # tick the second by keyboard, then consolidate
    page.get_by_label(f"Tick #{warm.pk} to consolidate").focus()
    page.keyboard.press("Space")
    page.get_by_role("button", name="Consolidate the ticked memories").click()
    conclusion = Memory.objects.get(text="Warm the cache before deploying")
    page.wait_for_url(f"**/memories/{conclusion.pk}/")
    status = page.get_by_role("status")
    assert f"Consolidated #{cold.pk}, #{warm.pk} into #{conclusion.pk}" in status.inner_text()
    lineage = page.locator("section", has=page.get_by_role("heading", name="Lineage"))
    assert lineage.get_by_role("link", name=f"#{cold.pk}").count() == 1
    assert lineage.get_by_role("link", name=f"#{warm.pk}").count() == 1
    assert page.evaluate("window.pwned") is None
    screenshot(page, "consolidated")
    # the refused attempt answered 400 (Chromium logs that); nothing else went wrong
    assert page.problems.found == [
        "console: Failed to load resource: the server responded with a status of 400 (Bad Request)"
    ]


def test_core_revisions_show_a_diff_and_revert(page, acme, alice):
    for fact in ("The API is on port 8420", "Deploys need a ticket"):
        core.core_edit(scope="memory", action="add", workspace=acme, user=None, content=fact)
    core.core_edit(
        scope="memory", action="replace", workspace=acme, user=None,
        content=f"The API is on port 9000 {HOSTILE}", old_text="port 8420",
    )  # fmt: skip
    log_in(page, "alice", "alice-password")
    page.goto("/w/acme/core/")
    doc = page.locator("#core-memory")
    doc.get_by_text("Revisions").click()
    v3 = doc.locator("#memory-v3")
    v3.get_by_text("What v3 changed").click()
    removed = v3.locator("li.diff-removed")
    added = v3.locator("li.diff-added")
    assert removed.text_content().strip() == "removed: −The API is on port 8420 §"
    assert added.text_content().strip() == f"added: +The API is on port 9000 {HOSTILE} §"
    assert page.evaluate("window.pwned") is None
    screenshot(page, "core-diff")

    v1 = doc.locator("#memory-v1")
    v1.get_by_text("What reverting to v1 would change").click()
    preview = v1.locator("ol.diff")
    assert preview.locator("li.diff-removed").count() == 2  # the other fact and the new port
    v1.get_by_role("button", name="Revert MEMORY to v1").click()
    page.get_by_role("status").get_by_text("MEMORY reverted to version 1.").wait_for()
    lines = page.locator("#core-memory .core-lines li")
    assert lines.all_inner_texts() == ["The API is on port 8420 §"]
    assert page.problems.found == []


PAGES = {
    "overview": "/w/acme/",
    "memories": "/w/acme/memories/",
    "skills": "/w/acme/skills/",
    "embedder": "/w/acme/settings/embedder/",
    "sessions": "/w/acme/sessions/",
    "states": "/w/acme/states/",
    "ledger": "/w/acme/ledger/",
    "declarations": "/w/acme/declarations/?directory=/srv/app",
    "settings": "/w/acme/settings/",
    "core": "/w/acme/core/",
}


def test_the_main_pages_read_at_desktop_and_phone_width(page, acme, alice):
    from contexts.tenancy import services

    story = session_story(acme)
    services.declaration_store(
        workspace=acme, directory="/srv/app", source_text="systemPrompt: [AGENT.md]\n"
    )
    services.context_documents_store(
        workspace=acme, documents=[("/srv/app/AGENT.md", "You are the rocket agent.\n")]
    )
    remember(acme, "deploy target is prod", state_key="deploy.target", state_value="prod")
    log_in(page, "alice", "alice-password")
    for width, viewport in (("desktop", None), ("phone", PHONE)):
        if viewport:
            page.set_viewport_size(viewport)
        for name, url in {
            **PAGES,
            "session": f"/w/acme/sessions/{story.session.pk}/",
            "memory": f"/w/acme/memories/{story.used.pk}/",
        }.items():
            response = page.goto(url)
            assert response is not None and response.status == 200, url
            overflow = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 1, f"{name} scrolls sideways at {width} width by {overflow}px"
            screenshot(page, f"{name}-{width}")
    assert page.evaluate("window.pwned") is None
    assert page.problems.found == []
    # the declarations preview read the stored sources and recorded nothing
    assert not SessionEvent.objects.filter(kind="context.assembly").exists()


def test_the_skip_link_is_the_first_stop(page, acme, alice):
    log_in(page, "alice", "alice-password")
    page.goto("/w/acme/")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
