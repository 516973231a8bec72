"""Every list of the REST API pages alike: `limit`, `offset`, `{count, offset, limit, results}`."""

from __future__ import annotations

import pytest

from contexts.models import AgentSession, SummaryNode

W = "/api/v1/workspaces/acme"

# Every list endpoint, with the bound of its `limit`.
LISTS: dict[str, int] = {
    "/api/v1/workspaces/": 200,
    "/api/v1/keys/": 200,
    f"{W}/members/": 200,
    f"{W}/sessions/": 200,
    f"{W}/memories/": 200,
    f"{W}/states/": 200,
    f"{W}/states/deploy.target/history/": 200,
    f"{W}/conflicts/": 200,
    f"{W}/dedupe-events/": 200,
    f"{W}/core/memory/revisions/": 200,
    f"{W}/sessions/s-1/summaries/": 200,
    f"{W}/declarations/": 1000,
    f"{W}/documents/": 1000,
    f"{W}/skills/": 500,
    f"{W}/skills/release-python-package/uses/": 500,
    f"{W}/skills/release-python-package/versions/": 200,
    f"{W}/skills/events/": 500,
    f"{W}/skills/proposals/": 500,
}


@pytest.fixture
def rest(acme, alice, make_key, api):
    """alice (owner of acme) with two rows, at least, in most of the lists."""
    client = api(make_key(alice))
    make_key(alice)  # a second key, so the key list has two
    client.post("/api/v1/workspaces/", {"slug": "acme-two"}, format="json")
    client.post(f"{W}/memories/", {"text": "Invoices go out on the first"}, format="json")
    client.post(
        f"{W}/memories/",
        {"text": "Node is on 20", "state_key": "node.version", "state_value": "20"},
        format="json",
    )
    for value in ("staging-1", "staging-2"):
        client.post(
            f"{W}/memories/",
            {"text": f"Deploys go to {value}", "state_key": "deploy.target", "state_value": value},
            format="json",
        )
    for line in ("CI runs on Buildkite", "Releases are signed"):
        client.post(f"{W}/core/memory/", {"action": "add", "content": line}, format="json")
    for n in (1, 2):
        client.post(
            f"{W}/declarations/",
            {"directory": f"/srv/app{n}", "source_text": "systemPrompt: [A.md]\n"},
            format="json",
        )
    documents = [{"path": f"/srv/app/doc{n}.md", "content": f"doc {n}\n"} for n in (1, 2)]
    client.post(f"{W}/documents/", {"documents": documents}, format="json")
    client.post(
        f"{W}/skills/",
        {"name": "release-python-package", "description": "Release to PyPI", "body": "uv build"},
        format="json",
    )
    client.post(
        f"{W}/skills/",
        {"name": "bump-deps", "description": "Bump dependencies weekly", "body": "uv lock -U"},
        format="json",
    )
    for outcome in ("success", "failure"):
        client.post(f"{W}/skills/release-python-package/uses/", {"outcome": outcome}, format="json")
    session = AgentSession.objects.create(workspace=acme, user=alice, external_id="s-1")
    AgentSession.objects.create(workspace=acme, user=alice, external_id="s-2")
    for start in (1, 13):
        SummaryNode.objects.create(
            session=session,
            node_id=f"d0-{start}-{start + 11}",
            depth=0,
            start_turn=start,
            end_turn=start + 11,
            text="## TASK\nMigrate the billing worker",
            builder=SummaryNode.Builder.EXTRACTIVE,
        )
    return client


@pytest.mark.parametrize("path", LISTS)
def test_every_list_answers_a_page_with_its_total(rest, path):
    answer = rest.get(path, {"limit": 1})
    assert answer.status_code == 200, answer.content
    page = answer.json()
    assert set(page) == {"count", "offset", "limit", "results"}, path
    assert (page["offset"], page["limit"]) == (0, 1)
    assert len(page["results"]) == min(1, page["count"])
    if page["count"] >= 2:  # the next page is the next row, and the total stays
        second = rest.get(path, {"limit": 1, "offset": 1}).json()
        assert second["count"] == page["count"] and second["results"] != page["results"]
    whole = rest.get(path).json()
    assert len(whole["results"]) == whole["count"] == page["count"]


@pytest.mark.parametrize("path", LISTS)
def test_a_limit_past_the_bound_is_refused_with_a_stable_code(rest, path):
    bound = LISTS[path]
    assert rest.get(path, {"limit": bound}).status_code == 200
    refused = rest.get(path, {"limit": bound + 1})
    assert refused.status_code == 400
    assert refused.json()["code"] == "limit_too_large" and refused.json()["maximum"] == bound
    for bad in ({"limit": 0}, {"limit": "ten"}, {"offset": -1}):
        answer = rest.get(path, bad)
        assert answer.status_code == 400 and answer.json()["code"] == "invalid_page", bad


def test_the_lists_that_the_fixture_fills_have_two_rows(rest):
    """Guards the paging assertion above: it only runs where there is a second page."""
    filled = [p for p in LISTS if rest.get(p).json()["count"] >= 2]
    empty = {f"{W}/conflicts/", f"{W}/dedupe-events/", f"{W}/skills/proposals/"}
    empty |= {f"{W}/skills/release-python-package/versions/"}
    assert set(LISTS) - set(filled) == empty
