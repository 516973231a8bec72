"""Core memory: each revision as a line diff, and what reverting to it would change."""

# The pages print real minus and multiplication signs, and the tests read what they print.
# ruff: noqa: RUF001

from __future__ import annotations

from memories import core
from tests.dashboard.stories import ESCAPED_SCRIPT, SCRIPT


def edit(workspace, action, content="", old_text=""):
    core.core_edit(
        scope="memory", action=action, workspace=workspace, user=None,
        content=content, old_text=old_text,
    )  # fmt: skip


def revision(html: str, version: int) -> str:
    return html.split(f'id="memory-v{version}"')[1].split('<li class="revision"')[0]


def test_each_revision_shows_its_lines_added_and_removed(acme, victor, as_user):
    edit(acme, "add", "The API is on port 8420")
    edit(acme, "add", f"Deploys need a ticket {SCRIPT}")
    edit(acme, "replace", "The API is on port 9000", old_text="port 8420")
    html = as_user(victor).get("/w/acme/core/").content.decode()
    v3 = revision(html, 3)
    assert "What v3 changed" in v3 and "+1 −1" in v3
    removed = v3.split('<li class="diff-removed">')[1].split("</li>")[0]
    added = v3.split('<li class="diff-added">')[1].split("</li>")[0]
    assert "removed: " in removed and "The API is on port 8420 §" in removed
    assert "added: " in added and "The API is on port 9000 §" in added
    assert f"Deploys need a ticket {ESCAPED_SCRIPT}" in v3  # an unchanged line, escaped
    assert SCRIPT not in html
    assert '<span class="tag">current</span>' in v3
    assert "What reverting to v3" not in v3  # nothing to revert to: it is the current one


def test_the_revert_preview_is_the_diff_from_now(acme, alice, as_user):
    edit(acme, "add", "The API is on port 8420")
    edit(acme, "add", "Deploys need a ticket")
    client = as_user(alice)
    v1 = revision(client.get("/w/acme/core/").content.decode(), 1)
    preview = v1.split("What reverting to v1 would change")[1]
    assert "Deploys need a ticket §" in preview.split('<li class="diff-removed">')[1]
    assert '<li class="diff-added">' not in preview
    assert "Revert MEMORY to v1" in preview
    html = client.post("/w/acme/core/memory/revert/", {"version": "1"}).content.decode()
    assert "MEMORY reverted to version 1." in html
    assert core.core_view(scope="memory", user=None, workspace=acme).lines == [
        "The API is on port 8420 §"
    ]
    assert "revert to v1" in revision(html, 3)


def test_a_viewer_sees_diffs_but_cannot_revert(acme, victor, as_user):
    edit(acme, "add", "One")
    edit(acme, "add", "Two")
    client = as_user(victor)
    html = client.get("/w/acme/core/").content.decode()
    assert "What reverting to v1 would change" in html and "Revert MEMORY" not in html
    assert client.post("/w/acme/core/memory/revert/", {"version": "1"}).status_code == 403
    assert core.core_view(scope="memory", user=None, workspace=acme).version == 2


def test_an_outsider_gets_404(acme, mallory, as_user):
    edit(acme, "add", "One")
    client = as_user(mallory)
    assert client.get("/w/acme/core/").status_code == 404
    assert client.post("/w/acme/core/memory/revert/", {"version": "1"}).status_code == 404


def test_the_latest_twenty_revisions_show_and_the_rest_on_request(acme, victor, as_user):
    for i in range(25):
        edit(acme, "add", f"Fact number {i}")
    client = as_user(victor)
    html = client.get("/w/acme/core/").content.decode()
    assert "(25, the latest 20 shown)" in html
    assert 'id="memory-v25"' in html and 'id="memory-v5"' not in html
    assert 'href="?all=memory#core-memory">Show all 25 revisions of MEMORY</a>' in html
    everything = client.get("/w/acme/core/?all=memory").content.decode()
    assert 'id="memory-v1"' in everything and "Show all" not in everything
