"""A private memory in the dashboard: its author sees the badge and shares it with one
click; until then the workspace's owner finds nothing."""

from __future__ import annotations

import pytest

from memories import services
from memories.services import RememberInput
from tests.browser.conftest import log_in, screenshot

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_author_shares_a_private_memory_the_owner_could_not_see(
    page, browser, live_url, acme, alice, bob
):
    memory = services.memory_remember(
        workspace=acme,
        item=RememberInput(text="Bob's note: the rollback script is tools/undo.sh", private=True),
        user=bob,
    ).memory
    log_in(page, "alice", "alice-password")
    page.goto("/w/acme/memories/")
    assert "undo.sh" not in page.content()
    # Asked for by id (not navigated to: the 404 is the point, not a page problem).
    assert page.request.get(f"{live_url}/w/acme/memories/{memory.pk}/").status == 404

    other = browser.new_page(base_url=live_url)
    log_in(other, "bob", "bob-password")
    other.goto("/w/acme/memories/")
    row = other.locator("tr", has_text="undo.sh")
    assert row.locator(".tag.private").inner_text() == "private"
    other.goto(f"/w/acme/memories/{memory.pk}/")
    other.get_by_role("button", name="Share with the workspace").click()
    other.get_by_text("Shared with the workspace.").wait_for()
    screenshot(other, "private-shared")
    memory.refresh_from_db()
    assert not memory.private

    page.goto("/w/acme/memories/")
    assert "undo.sh" in page.content()
    assert page.problems.found == []
    other.close()
