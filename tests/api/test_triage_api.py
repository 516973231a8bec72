"""Settling conflict clusters over REST: the same service and audit as the dashboard's queue."""

from __future__ import annotations

import pytest

from contexts.models import AuditEvent, Workspace
from memories.models import Memory

BASE = "/api/v1/workspaces/acme"
MONDAY = [
    "The release branch is cut every Monday morning.",
    "Release branches get cut each Monday in the morning.",
]
UNRELATED = "Grafana dashboards live in the ops-observability repository."


@pytest.fixture
def bob_api(acme, bob, make_key, api):
    return api(make_key(bob))


def remember(client, text):
    response = client.post(f"{BASE}/memories/", {"text": text, "source": "model"}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def clusters(client):
    response = client.get(f"{BASE}/conflicts/?threshold=0.8")
    assert response.status_code == 200, response.content
    return response.json()


def settle(client, cluster, body):
    return client.post(f"{BASE}/conflicts/{cluster}/settle/", body, format="json")


def test_a_cluster_is_listed_with_its_id_and_gone_once_kept_both(bob_api, client, alice):
    ids = sorted(remember(bob_api, t) for t in MONDAY)
    remember(bob_api, UNRELATED)
    page = clusters(bob_api)
    assert (page["count"], page["offset"], page["limit"]) == (1, 0, 50)
    [cluster] = page["results"]
    assert cluster["id"] == f"{ids[0]}-{ids[1]}" and cluster["ids"] == ids
    assert [m["text"] for m in cluster["members"]] == MONDAY
    assert cluster["pairs"] == [{"a": ids[0], "b": ids[1], "cosine": cluster["cosine"]}]

    response = settle(bob_api, cluster["id"], {"decision": "keep_both"})
    assert response.status_code == 200, response.content
    assert response.json() == {
        "cluster": cluster["id"],
        "ids": ids,
        "decision": "keep_both",
        "holds": None,
    }
    assert clusters(bob_api)["count"] == 0
    assert Memory.objects.filter(pk__in=ids, valid_to__isnull=True).count() == 2
    event = AuditEvent.objects.get(action="triage.keep_both")
    assert event.user is not None and event.user.username == "bob"
    assert (event.origin, event.detail["ids"]) == ("rest", ids)
    # the dashboard's queue reads the same decision
    client.force_login(alice)
    page = client.get("/w/acme/triage/").content.decode()
    assert MONDAY[0] not in page


def test_supersede_keeps_the_chosen_entry(bob_api):
    ids = sorted(remember(bob_api, t) for t in MONDAY)
    cluster = clusters(bob_api)["results"][0]["id"]
    answer = settle(bob_api, cluster, {"decision": "supersede", "keep": ids[1]}).json()
    assert answer["holds"]["id"] == ids[1] and answer["holds"]["text"] == MONDAY[1]
    old = Memory.objects.get(pk=ids[0])
    assert old.valid_to is not None and old.superseded_by_id == ids[1]
    assert clusters(bob_api)["count"] == 0


def test_consolidate_writes_the_conclusion_over_them(bob_api):
    ids = sorted(remember(bob_api, t) for t in MONDAY)
    cluster = clusters(bob_api)["results"][0]["id"]
    conclusion = "Release branches are cut on Monday mornings, before standup."
    answer = settle(bob_api, cluster, {"decision": "consolidate", "conclusion": conclusion}).json()
    assert answer["holds"]["text"] == conclusion
    assert sorted(answer["holds"]["evidence_ids"]) == ids
    assert clusters(bob_api)["count"] == 0


def test_refusals_carry_stable_codes(bob_api, acme, victor, make_key, api):
    ids = sorted(remember(bob_api, t) for t in MONDAY)
    cluster = f"{ids[0]}-{ids[1]}"

    def refused(path_cluster, body):
        response = settle(bob_api, path_cluster, body)
        return response.status_code, response.json()["code"]

    assert refused(cluster, {"decision": "merge"}) == (400, "invalid")
    assert refused(cluster, {"decision": "consolidate"}) == (400, "conclusion_required")
    assert refused(cluster, {"decision": "supersede", "keep": 999999}) == (400, "keep_required")
    assert refused("not-a-cluster", {"decision": "dismiss"}) == (404, "cluster_not_found")
    assert refused(str(ids[0]), {"decision": "dismiss"}) == (404, "cluster_not_found")
    assert refused(f"{ids[0]}-{2**63}", {"decision": "dismiss"}) == (404, "cluster_not_found")
    # an entry of another workspace is not found, and nothing says it exists
    other = Workspace.objects.create(slug="other", name="Other")
    foreign = Memory.objects.create(workspace=other, text="elsewhere")
    assert refused(f"{ids[0]}-{foreign.pk}", {"decision": "dismiss"}) == (404, "memory_not_found")
    viewer = api(make_key(victor))
    assert viewer.get(f"{BASE}/conflicts/").status_code == 200
    response = settle(viewer, cluster, {"decision": "dismiss"})
    assert response.status_code == 403
    assert clusters(bob_api)["count"] == 1
    assert not AuditEvent.objects.filter(action__startswith="triage.").exists()


def test_the_schema_names_the_settle_endpoint(bob_api):
    schema = bob_api.get("/api/v1/schema/?format=json").json()
    post = schema["paths"]["/api/v1/workspaces/{slug}/conflicts/{cluster}/settle/"]["post"]
    ref = post["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    body = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]
    assert {"decision", "conclusion", "keep"} <= set(body["properties"])
    assert body["required"] == ["decision"]
    assert "200" in post["responses"]


def test_a_fading_memory_is_listed_and_settled_once(bob_api, acme, victor, make_key, api):
    ids = [remember(bob_api, t) for t in ("Use uv for the lock file", UNRELATED)]
    for memory in Memory.objects.filter(pk__in=ids):
        Memory.objects.filter(pk=memory.pk).update(
            last_accessed=memory.last_accessed.replace(year=memory.last_accessed.year - 2)
        )
    page = bob_api.get(f"{BASE}/fading/").json()
    assert page["count"] == 2 and all(0 < m["retention"] < 0.5 for m in page["results"])
    viewer = api(make_key(victor))
    path = f"{BASE}/fading/{ids[0]}/settle/"
    assert viewer.post(path, {"decision": "keep"}, format="json").status_code == 403
    refused = bob_api.post(path, {"decision": "pin"}, format="json")
    assert (refused.status_code, refused.json()["code"]) == (400, "invalid")
    kept = bob_api.post(path, {"decision": "keep"}, format="json")
    assert kept.status_code == 200 and kept.json()["pinned"] is True
    forgotten = bob_api.post(
        f"{BASE}/fading/{ids[1]}/settle/", {"decision": "forget"}, format="json"
    )
    assert forgotten.status_code == 200 and forgotten.json()["forgotten"] is not None
    assert bob_api.get(f"{BASE}/fading/").json()["count"] == 0
    actions = set(AuditEvent.objects.filter(origin="rest").values_list("action", flat=True))
    assert {"triage.keep", "triage.forget"} <= actions
