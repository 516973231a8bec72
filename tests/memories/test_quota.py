"""Per-workspace quotas: memories and stored bytes, refused whole with what is used and allowed."""

from __future__ import annotations

import json

import pytest

from contexts.models import CompressionRef
from memflow_site.porting import mem0_import
from memories.models import Memory

BASE = "/api/v1/workspaces/acme"


def set_quotas(workspace, **quotas: int) -> None:
    workspace.settings = {**(workspace.settings or {}), **quotas}
    workspace.save(update_fields=["settings"])


@pytest.fixture
def rest(acme, bob, make_key, api):
    return api(make_key(bob))


def remember(rest, text: str):
    return rest.post(f"{BASE}/memories/", {"text": text}, format="json")


def test_a_remember_past_the_memory_quota_is_refused_with_use_and_limit(acme, rest):
    set_quotas(acme, quota_memories=2)
    assert remember(rest, "The staging cluster runs Kubernetes 1.31").status_code == 201
    assert remember(rest, "Invoices are generated on the first of the month").status_code == 201
    refused = remember(rest, "The office Wi-Fi password rotates every quarter")
    assert refused.status_code == 409
    body = refused.json()
    assert (body["code"], body["quota"], body["use"], body["limit"]) == (
        "quota_exceeded",
        "quota_memories",
        2,
        2,
    )
    assert "quota_memories" in body["detail"]
    assert Memory.objects.filter(workspace=acme).count() == 2


def test_a_bulk_that_would_pass_the_quota_is_refused_whole(acme, rest):
    set_quotas(acme, quota_memories=3)
    remember(rest, "Releases are tagged from the main branch")
    items = [
        {"text": "The billing worker retries three times"},
        {"text": "Backups land in the eu-west bucket nightly"},
        {"text": "On-call hands over every Monday at ten"},
    ]
    refused = rest.post(f"{BASE}/memories/bulk/", {"items": items}, format="json")
    assert refused.status_code == 409 and refused.json()["code"] == "quota_exceeded"
    assert (refused.json()["use"], refused.json()["adding"]) == (1, 3)
    assert Memory.objects.filter(workspace=acme).count() == 1
    fits = rest.post(f"{BASE}/memories/bulk/", {"items": items[:2]}, format="json")
    assert fits.status_code == 200 and fits.json()["created"] == 2


def test_stored_bytes_count_memory_text_and_stored_originals(acme, rest):
    set_quotas(acme, quota_bytes=2000)
    assert remember(rest, "x" * 1500).status_code == 201  # 1,500 bytes of text
    output = "line of a long tool output\n" * 40  # 1,080 bytes
    refused = rest.post(f"{BASE}/compression/", {"text": output}, format="json")
    assert refused.status_code == 409
    assert (refused.json()["quota"], refused.json()["use"], refused.json()["limit"]) == (
        "quota_bytes",
        1500,
        2000,
    )
    assert not CompressionRef.objects.filter(workspace=acme).exists()
    set_quotas(acme, quota_bytes=3000)
    assert rest.post(f"{BASE}/compression/", {"text": output}, format="json").status_code == 201
    # The original's bytes now count against a remember too: 1,500 + 1,080 + 500 > 3,000.
    refused = remember(rest, "é" * 250)  # 500 bytes of UTF-8
    assert refused.status_code == 409 and refused.json()["use"] == 2580


def test_an_import_past_the_quota_is_refused_before_it_stores_anything(acme, tmp_path):
    set_quotas(acme, quota_memories=2)
    path = tmp_path / "mem0.json"
    items = [
        {"id": f"m-{i}", "memory": text, "created_at": "2025-03-01T09:00:00Z"}
        for i, text in enumerate(
            ["Prefers dark mode", "Works on the rockets project", "Ships on Fridays"]
        )
    ]
    path.write_text(json.dumps({"results": items}), encoding="utf-8")
    with pytest.raises(Exception) as refused:
        mem0_import(path=path, workspace=acme)
    assert getattr(refused.value, "code", None) == "quota_exceeded"
    assert not Memory.objects.filter(workspace=acme).exists()


def test_the_settings_page_shows_use_against_the_quota(acme, alice, rest, client):
    remember(rest, "The staging cluster runs Kubernetes 1.31")
    set_quotas(acme, quota_memories=4)
    client.force_login(alice)
    page = client.get("/w/acme/settings/").content.decode()
    quotas = page[page.index('id="quotas"') :]
    assert (
        '<th scope="row">Memories</th><td>1 <span class="muted">(25%)</span></td><td>4</td>'
        in quotas
    )
    assert "unlimited" in quotas  # quota_bytes is left at 0


def test_past_the_byte_quota_a_hook_leaves_the_tool_result_as_it_was(acme, bob, make_key, api):
    from tests.flowctx.samples import failing_pytest_run

    set_quotas(acme, quota_bytes=1000)
    body = {
        "session_id": "cc-9",
        "cwd": "/home/bob/acme",
        "hook_event_name": "post-tool-use",
        "tool_name": "Bash",
        "tool_input": {"command": "pytest -q"},
        "tool_response": {"stdout": failing_pytest_run(), "stderr": "", "interrupted": False},
    }
    answer = api(make_key(bob, workspace=acme)).post(
        "/api/v1/hooks/post-tool-use", body, format="json"
    )
    assert answer.status_code == 200, answer.content
    assert "tool_result" not in answer.json()
    assert not CompressionRef.objects.filter(workspace=acme).exists()
