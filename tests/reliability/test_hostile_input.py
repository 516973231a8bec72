"""Input that once made a 5xx (finding 9 of the security review): each now answers
a 4xx with a stable code and writes nothing, and a hook keeps its event."""

from __future__ import annotations

import json

import httpx
import pytest

from contexts.models import Declaration, SessionEvent
from memories.models import Memory

OVERFLOW = '{"text": "The build cache lives in /var/cache/ci", "metadata": {"weight": 1e400}}'


@pytest.fixture
def client(acme, bob, make_key, api):
    return api(make_key(bob, workspace=acme))


def post_raw(client, path: str, raw: str):
    return client.post(path, raw, content_type="application/json")


def test_an_infinite_number_in_a_memory_is_refused_and_nothing_is_stored(client):
    answer = post_raw(client, "/api/v1/workspaces/acme/memories/", OVERFLOW)
    assert answer.status_code == 400
    assert answer.json()["code"] == "number_out_of_range"
    bulk = post_raw(client, "/api/v1/workspaces/acme/memories/bulk/", f'{{"items": [{OVERFLOW}]}}')
    assert bulk.status_code == 400
    assert not Memory.objects.exists()


@pytest.mark.parametrize(
    ("event", "raw"),
    [
        (
            "user-prompt",
            '{"session_id": "n-1", "prompt": "why does the cache miss?", "score": 1e400}',
        ),
        (
            "post-tool-use",
            '{"session_id": "n-2", "tool_name": "Bash", "tool_input": {"command": "ls"},'
            ' "tool_response": {"stdout": "a\\nb\\n", "elapsed": -1e400}}',
        ),
    ],
)
def test_a_hook_with_an_infinite_number_keeps_its_event(client, event, raw):
    answer = post_raw(client, f"/api/v1/hooks/{event}", raw)
    assert answer.status_code == 200, answer.content
    session_id = json.loads(raw.replace("1e400", "0"))["session_id"]
    assert SessionEvent.objects.filter(session__external_id=session_id, kind=event).exists()


def test_a_nul_escape_in_a_declaration_is_a_line_numbered_refusal(client):
    answer = client.post(
        "/api/v1/workspaces/acme/declarations/",
        {"directory": "/src/app", "source_text": 'identity:\n  name: "a\\0b"\n'},
        format="json",
    )
    assert answer.status_code == 400, answer.content
    body = answer.json()
    assert body["code"] == "invalid_declaration"
    assert body["line"] == 2
    assert not Declaration.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "x": "\xff\xfe"}', "invalid_utf8"),
        (b"[" * 10_000 + b"]" * 10_000, "json_too_deep"),
    ],
)
def test_mcp_refuses_a_body_it_cannot_read_with_a_400(live, acme, alice, make_key, raw, code):
    answer = httpx.post(
        f"{live.url}/mcp/?workspace=acme",
        content=raw,
        headers={
            "Authorization": f"Bearer {make_key(alice)}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
        timeout=60,
    )
    assert answer.status_code == 400, answer.text
    assert answer.json()["code"] == code


@pytest.mark.django_db(transaction=True)
def test_a_chunked_body_is_read_whole_not_as_empty(live, acme, bob, make_key):
    text = "The release notes are drafted in docs/releases/NEXT.md"

    def chunks():
        raw = json.dumps({"text": text}).encode()
        for start in range(0, len(raw), 7):  # no Content-Length: Transfer-Encoding chunked
            yield raw[start : start + 7]

    answer = httpx.post(
        f"{live.url}/api/v1/workspaces/acme/memories/",
        content=chunks(),
        headers={"Authorization": f"Bearer {make_key(bob)}", "Content-Type": "application/json"},
        timeout=60,
    )
    assert answer.status_code == 201, answer.text
    assert Memory.objects.filter(workspace=acme, text=text).exists()


def test_an_ordinary_403_is_logged_in_one_line_without_a_traceback(acme, victor, caplog):
    from django.test import Client

    browser = Client()
    browser.force_login(victor)  # a viewer
    with caplog.at_level("WARNING", logger="django.request"):
        answer = browser.post("/w/acme/core/memory/add/", {"content": "a viewer's write"})
    assert answer.status_code == 403
    forbidden = [r for r in caplog.records if r.name == "django.request"]
    assert forbidden, "the refusal is still logged"
    assert all(r.exc_info is None for r in forbidden)
