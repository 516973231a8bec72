"""The switcher by keyboard, and copying a new key, in a real browser."""

from __future__ import annotations

import pytest

from contexts.tenancy import services
from skills import services as skill_services
from tests.browser.conftest import log_in, screenshot

pytestmark = pytest.mark.django_db(transaction=True)


def test_escape_closes_the_switcher_and_a_switch_keeps_the_page(page, acme, alice):
    services.workspace_create(user=alice, slug="beta", name="Beta Labs")
    skill = skill_services.skill_create(
        workspace=acme, user=None, name="ship", description="Ship it", body="1. Tag", why="hand"
    )
    skill_services.skill_edit(skill=skill, user=None, why="sign too", body="1. Tag\n2. Sign")
    log_in(page, "alice", "alice-password")
    page.goto("/w/acme/skills/")
    page.get_by_text("2 versions").click()
    screenshot(page, "skill-versions")
    switcher = page.locator("details.switcher")
    summary = page.get_by_label("Switch workspace")
    summary.focus()
    page.keyboard.press("Enter")
    assert switcher.get_attribute("open") is not None
    screenshot(page, "switcher-open")
    page.keyboard.press("Escape")
    assert switcher.get_attribute("open") is None
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Switch workspace"
    summary.click()
    page.get_by_role("link", name="Beta Labs").click()
    page.wait_for_url("**/w/beta/skills/")
    assert page.problems.found == []


def test_a_new_key_is_copied_with_one_click(page, acme, alice):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    log_in(page, "alice", "alice-password")
    page.goto("/keys/")
    page.get_by_label("Name").fill("laptop")
    page.get_by_role("button", name="Create key").click()
    raw = page.locator("#raw-key").inner_text().strip()
    page.get_by_role("button", name="Copy key").click()
    page.get_by_role("button", name="Copied").wait_for()
    assert page.locator("#copy-status").inner_text() == "Copied to the clipboard."
    assert page.evaluate("navigator.clipboard.readText()") == raw
    screenshot(page, "key-copied")
    assert page.problems.found == []


def test_a_refused_core_edit_keeps_the_text_at_the_pages_own_address(page, acme, alice):
    from memories import core

    core.core_set_limit(scope="memory", workspace=acme, user=None, limit=100)
    log_in(page, "alice", "alice-password")
    page.goto("/w/acme/core/")
    typed = "The staging database moved to db2.internal in March, after the outage. " * 2
    form = page.locator("#core-memory form.core-edit")
    form.get_by_label("New fact (for add/replace)").fill(typed)
    form.get_by_role("button").click()
    page.get_by_text("candidates for the archive").or_(
        page.get_by_text("would hold")
    ).first.wait_for()
    refilled = page.locator("#core-memory form.core-edit").get_by_label(
        "New fact (for add/replace)"
    )
    assert refilled.input_value() == typed
    assert page.evaluate("location.pathname") == "/w/acme/core/"  # a reload does not re-post
    screenshot(page, "core-refused-kept")
    # The refused form is answered 400, which Chromium logs; that is the only complaint.
    assert [p for p in page.problems.found if "status of 400" not in p] == []
