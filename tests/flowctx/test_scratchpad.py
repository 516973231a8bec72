"""The model's own working memory: append, replace, rethink, a hard cap, injection."""

from __future__ import annotations

import pytest


@pytest.fixture
def client(acme, bob, make_key, api):
    return api(make_key(bob, workspace=acme))


URL = "/api/v1/workspaces/acme/sessions/cc-7/scratchpad/"


def edit(client, **body):
    return client.post(URL, body, format="json")


def test_append_joins_with_a_newline_and_replace_changes_the_first_occurrence(client):
    assert edit(client, op="append", text="goal: fix refund rounding").status_code == 200
    edit(client, op="append", text="todo: check invoice.py")
    edit(client, op="append", text="todo: run tests")
    answer = edit(client, op="replace", old_text="todo:", text="done:").json()
    assert answer["text"] == ("goal: fix refund rounding\ndone: check invoice.py\ntodo: run tests")
    assert answer["chars_current"] == len(answer["text"])
    assert answer["chars_limit"] == 8000
    assert answer["version"] == 4
    assert client.get(URL).json()["text"] == answer["text"]


def test_rethink_rewrites_it_whole(client):
    edit(client, op="append", text="old notes")
    answer = edit(client, op="rethink", text="a clean slate").json()
    assert answer["text"] == "a clean slate"


def test_past_the_cap_it_is_refused_whole_never_sliced(client, acme):
    acme.settings = {"scratchpad_max_chars": 40}
    acme.save()
    edit(client, op="append", text="x" * 30)
    refused = edit(client, op="append", text="y" * 20)
    assert refused.status_code == 400
    assert refused.json()["code"] == "scratchpad_full"
    assert "40" in refused.json()["detail"]
    assert client.get(URL).json()["text"] == "x" * 30


def test_replacing_text_that_is_not_there_says_so(client):
    edit(client, op="append", text="alpha")
    missing = edit(client, op="replace", old_text="beta", text="gamma")
    assert missing.status_code == 404
    assert missing.json()["code"] == "old_text_not_found"
    unknown = edit(client, op="shred", text="")
    assert unknown.status_code == 400


def test_it_is_injected_on_each_prompt_only_when_enabled(client, acme):
    edit(client, op="append", text="remember: staging is eu-west-1")

    def prompt() -> dict:
        body = {"session_id": "cc-7", "prompt": "what next?", "hook_event_name": "UserPromptSubmit"}
        return client.post("/api/v1/hooks/user-prompt", body, format="json").json()

    assert "working_memory" not in prompt()["additionalContext"]
    acme.settings = {"scratchpad": True}
    acme.save()
    text = prompt()["additionalContext"]
    expected = (
        '<working_memory chars_current="30" chars_limit="8000">\n'
        "remember: staging is eu-west-1\n</working_memory>"
    )
    assert expected in text


def test_a_credential_is_refused_and_nothing_is_stored(client):
    edit(client, op="append", text="deploy notes")
    refused = edit(client, op="append", text="token: ghp_" + "a1B2c3D4e5" * 4)
    assert refused.status_code == 400
    assert refused.json()["code"] == "secret_detected"
    assert client.get(URL).json()["text"] == "deploy notes"
