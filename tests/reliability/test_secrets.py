"""Credentials stay out: the filter on every write path, keys never logged or
stored raw, and a production configuration that passes `check --deploy`."""

from __future__ import annotations

import logging
import os
import secrets
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from contexts.models import ApiKey
from contexts.secrets import find_secret, find_secret_in_json, redact_json, redact_secrets
from memories import core, services
from memories.bench import secrets as secrets_bench
from memories.models import CoreMemory, Memory
from tests.mcp.client import Mcp
from tests.reliability.data.secret_shapes import credential_shapes, ordinary_logs

REPO = Path(__file__).resolve().parents[2]

# Fakes in the shapes the filter knows; none is a real credential.
FAKE_JWT = ".".join(
    [
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
        "eyJzdWIiOiJmYWtlLXVzZXIiLCJuYW1lIjoiRXhhbXBsZSBPbmx5In0",
        "FAKEsignatureFAKEsignatureFAKEsignature0000",
    ]
)
CREDENTIALS = {
    "github": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "aws": "AKIA" + "IOSFODNN7EXAMPLE",
    "private key": "-----BEGIN OPENSSH PRIVATE KEY-----",
    "assignment": 'DATABASE_PASSWORD="' + "q8Zr2Lx9Vt4Nw7Ks3Hd6" + '"',
    "memflow": "mf_" + "Xy7" * 15,
    # The four shapes of review finding 5, which used to be stored and recalled.
    "url password": "postgres://user:" + "pass" + "@host/db",
    "bearer jwt": "Authorization: Bearer " + FAKE_JWT,
    "password assignment": "password=" + "hunter2",
    "password sentence": "the db password is " + "hunter2",
}


def text_with(secret: str) -> str:
    return f"For the deploy, use {secret} when the pipeline asks."


@pytest.fixture
def client(acme, bob, make_key, api):
    return api(make_key(bob))


@pytest.mark.parametrize("secret", CREDENTIALS.values(), ids=CREDENTIALS.keys())
def test_rest_remember_refuses_a_credential_and_stores_nothing(client, secret):
    answer = client.post(
        "/api/v1/workspaces/acme/memories/", {"text": text_with(secret)}, format="json"
    )
    assert answer.status_code == 422, answer.content
    assert answer.json()["code"] == "secret_detected"
    bulk = client.post(
        "/api/v1/workspaces/acme/memories/bulk/",
        {"items": [{"text": "a harmless fact"}, {"text": text_with(secret)}]},
        format="json",
    )
    assert bulk.status_code == 422 and bulk.json()["index"] == 1
    state = client.post(
        "/api/v1/workspaces/acme/memories/",
        {"text": "the deploy credential", "state_key": "deploy.cred", "state_value": secret},
        format="json",
    )
    assert state.status_code == 422
    core = client.post(
        "/api/v1/workspaces/acme/core/memory/",
        {"action": "add", "content": text_with(secret)},
        format="json",
    )
    assert core.status_code == 422 and core.json()["code"] == "secret_detected"
    assert not Memory.objects.exists()
    assert not CoreMemory.objects.filter(content__contains=secret).exists()


@pytest.mark.parametrize("secret", CREDENTIALS.values(), ids=CREDENTIALS.keys())
def test_a_prompt_holding_a_credential_is_not_captured_by_the_hook(client, secret):
    answer = client.post(
        "/api/v1/hooks/user-prompt",
        {"session_id": "s1", "workspace": "acme", "prompt": text_with(secret)},
        format="json",
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["captured"] is False
    assert "credential" in answer.json()["skipped"]
    compaction = client.post(
        "/api/v1/hooks/pre-compact",
        {"session_id": "s1", "workspace": "acme", "summary": text_with(secret)},
        format="json",
    )
    assert compaction.status_code == 200
    assert not Memory.objects.filter(text__contains=secret).exists()


@pytest.mark.django_db(transaction=True)
def test_mcp_remember_and_core_memory_refuse_a_credential(live, acme, bob, make_key):
    mcp = Mcp(f"{live.url}/mcp/?workspace=acme", make_key(bob))
    for secret in CREDENTIALS.values():
        refused = mcp.error("flymemory_remember", text=text_with(secret))
        assert refused["code"] == "secret_detected", refused
        refused = mcp.error("memory", action="add", target="memory", content=text_with(secret))
        assert refused["code"] == "secret_detected", refused
    assert not Memory.objects.exists()
    assert not CoreMemory.objects.filter(content__contains="deploy").exists()


def test_api_keys_are_stored_hashed(alice, make_key):
    raw = make_key(alice)
    row = ApiKey.objects.values().get()
    assert all(raw not in str(value) for value in row.values())
    assert len(row["prefix"]) <= 16 and raw.startswith(row["prefix"])


def test_api_keys_never_reach_the_log_records(acme, bob, make_key, api, caplog):
    raw = make_key(bob)
    bogus = "mf_" + secrets.token_urlsafe(32)
    with caplog.at_level(logging.DEBUG):
        api(raw).get("/api/v1/workspaces/acme/memories/")
        api(raw).get("/api/v1/workspaces/acme/memories/987654/")  # a logged 404
        api(raw).post("/api/v1/workspaces/acme/memories/", {"text": ""}, format="json")  # 400
        api(bogus).get("/api/v1/workspaces/acme/")  # a logged 401
        api(raw).post(
            "/api/v1/hooks/user-prompt",
            {"session_id": "s1", "workspace": "acme", "prompt": f"my key is {raw}"},
            format="json",
        )
    assert caplog.records, "nothing was logged: the check would prove nothing"
    for record in caplog.records:
        text = record.getMessage() + repr(record.args) + repr(record.__dict__.get("request"))
        assert raw not in text and bogus not in text, record.getMessage()
    # The prompt holding the key was not captured, and the session log keeps
    # only what the harness sent (the key is in the prompt, as typed).
    assert not Memory.objects.filter(text__contains=raw).exists()


@pytest.mark.django_db(transaction=True)
def test_api_keys_never_reach_the_server_log(live, acme, bob, make_key):
    raw = make_key(bob)
    bogus = "mf_" + secrets.token_urlsafe(32)
    headers = {"Authorization": f"Bearer {raw}"}
    with httpx.Client(base_url=live.url, timeout=60) as http:
        assert http.get("/api/v1/workspaces/acme/", headers=headers).status_code == 200
        assert http.get("/api/v1/workspaces/acme/nope/", headers=headers).status_code == 404
        assert (
            http.get("/api/v1/workspaces/acme/", headers={"Authorization": f"Bearer {bogus}"})
        ).status_code == 401
        deep = '{"session_id": "s", "workspace": "acme", "x": ' + "[" * 200 + "]" * 200 + "}"
        answer = http.post(
            "/api/v1/hooks/post-tool-use",
            content=deep,
            headers={**headers, "Content-Type": "application/json"},
        )
        assert answer.status_code == 400
    Mcp(f"{live.url}/mcp/?workspace=acme", raw).ok("flymemory_stats")
    log = live.log()
    assert "Bad Request" in log or "Not Found" in log, "the server logged nothing to search"
    assert raw not in log and bogus not in log
    assert "Bearer" not in log


def test_responses_carry_the_hardening_headers(client):
    answer = client.get("/api/v1/workspaces/acme/")
    assert answer["X-Content-Type-Options"] == "nosniff"
    assert answer["X-Frame-Options"] == "DENY"
    assert answer["Referrer-Policy"] == "same-origin"


# security.W004 (HSTS) and security.W008 (SSL redirect) are left to the TLS
# front: `memflow serve` answers plain HTTP on loopback, where the hooks of the
# same machine call it; a redirect to HTTPS there would break every hook.
JUSTIFIED = {"security.W004", "security.W008"}


def test_check_deploy_passes_with_production_settings(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMFLOW_", "DATABASE_URL"))}
    env.update(
        MEMFLOW_DATA_DIR=str(tmp_path),
        MEMFLOW_DEBUG="false",
        MEMFLOW_SECURE_COOKIES="true",
        MEMFLOW_SECRET_KEY=secrets.token_urlsafe(64),
        MEMFLOW_ALLOWED_HOSTS="memflow.example.org",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "ERROR"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    found = {
        line.split("(", 1)[1].split(")", 1)[0]
        for line in result.stderr.splitlines()
        if line.startswith("?: (")
    }
    assert found <= JUSTIFIED, result.stderr


# --- the session log: the harness's JSON kept whole, credentials cut out -----------------


@pytest.mark.parametrize("secret", CREDENTIALS.values(), ids=CREDENTIALS.keys())
def test_the_session_log_keeps_every_field_but_no_credential(acme, bob, make_key, api, secret):
    from contexts.models import AgentSession, SessionEvent

    client = api(make_key(bob, workspace=acme))
    body = {
        "session_id": "cc-secret",
        "hook_event_name": "UserPromptSubmit",
        "prompt": text_with(secret),
        "env": {"DSH_CONTEXT_TOKEN_HINT": f"export {secret}", "DSH_CONTEXT_MODE": "plan"},
        "harness_extra": {"notes": [f"rotate {secret} soon", 7]},
    }
    answer = client.post("/api/v1/hooks/user-prompt", body, format="json")
    assert answer.status_code == 200 and answer.json()["captured"] is False
    tool = client.post(
        "/api/v1/hooks/post-tool-use",
        {
            "session_id": "cc-secret",
            "tool_name": "Bash",
            "tool_input": {"command": f"deploy --with '{secret}'"},
            "tool_response": {"stdout": f"ok\n{secret}\ndone"},
        },
        format="json",
    )
    assert tool.status_code == 200
    session = AgentSession.objects.get(workspace=acme, external_id="cc-secret")
    stored = [e.payload for e in SessionEvent.objects.filter(session=session)]
    stored.append(session.params)
    dumped = repr(stored)
    assert secret not in dumped
    core_of_secret = secret.split("=")[-1].strip('"').replace("-----", "")
    assert core_of_secret not in dumped
    prompt_event, tool_event = stored[0], stored[1]
    # Everything around the credential, and every field, is still there (a
    # PEM header with no footer takes the rest of its string with it).
    whole_rest = not secret.startswith("-----BEGIN")
    assert prompt_event["prompt"].startswith("For the deploy, use ")
    assert "[redacted: " in prompt_event["prompt"]
    assert prompt_event["prompt"].endswith(" when the pipeline asks.") == whole_rest
    assert prompt_event["harness_extra"]["notes"][1] == 7
    assert prompt_event["env"]["DSH_CONTEXT_MODE"] == "plan"
    assert session.params["DSH_CONTEXT_MODE"] == "plan"
    assert tool_event["tool_response"]["stdout"].startswith("ok\n")
    assert "[redacted: " in tool_event["tool_response"]["stdout"]
    assert tool_event["tool_response"]["stdout"].endswith("\ndone") == whole_rest


def test_redaction_leaves_ordinary_text_as_it_was_and_cuts_a_whole_pem_block():
    from contexts.secrets import redact_json, redact_secrets

    ordinary = "token budget: 2500 chars; password reset at /auth/reset (see RFC 6749)"
    assert redact_secrets(ordinary) is ordinary
    pem = (
        "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow"
        + "A" * 60
        + "\n-----END RSA PRIVATE KEY-----\nafter"
    )
    assert redact_secrets(pem) == "key:\n[redacted: private key]\nafter"
    cut = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA"
    assert redact_secrets(cut) == "[redacted: private key]"
    value = {"a": [1, None, True, {"b": "nothing here"}], "c": 2.5}
    assert redact_json(value) == value


# --- how much it catches, how often it refuses ordinary text (review finding 5) ----------


def test_the_labelled_credential_shapes_are_caught():
    shapes = credential_shapes()
    assert len(shapes) >= 200 and len({s.kind for s in shapes}) >= 30
    missed = [s.kind for s in shapes if not find_secret(s.text)]
    assert 1 - len(missed) / len(shapes) >= 0.99, missed
    # The same list, built twice, is the same list: the rates are reproducible.
    assert credential_shapes() == shapes


@pytest.mark.parametrize(
    "text",
    [
        "the db password is hunter2",
        "my password: S3cret!",
        "pwd is Tr0ub4dor&3",
        "The password for the staging database is Summer#2023.",
        "set the password to dragon88 for now",
        "PGPASSWORD=hunter2 psql -h db",
        "redis://:p4ssw0rd@localhost:6379/0",
        "curl -H 'Authorization: Bearer " + "a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6" + "' https://x",
    ],
)
def test_passwords_in_prose_and_config_are_caught(text):
    assert find_secret(text)
    assert "hunter2" not in redact_secrets(text) and "[redacted: " in redact_secrets(text)


@pytest.mark.parametrize(
    "text",
    [
        "The password is required.",
        "my password is too short",
        "password authentication failed for user postgres",
        "password: ********",
        "PWD=/home/ci/project",
        "password = getpass.getpass()",
        "api_key = os.environ['API_KEY']",
        "token = request.headers.get('Authorization')",
        "secret: ${{ secrets.NPM_TOKEN }}",
        "Authorization: Bearer <token>",
        "Authorization: Bearer $TOKEN",
        "DATABASE_URL=postgres://localhost:5432/test",
        "url = f'postgresql://postgres:{password}@127.0.0.1/db'",
        "resolve_workspace(payload=payload, user=user, api_key=api_key)",
        "The API key is stored in Vault; the token is valid for 3600s.",
        "cmospwd: CmosPwd is a cross-platform tool to decrypt passwords",
    ],
)
def test_ordinary_text_about_credentials_is_not_one(text):
    assert find_secret(text) is None, text
    assert redact_secrets(text) is text


def _false_positive_rate(texts):
    flagged = [t for t in texts if find_secret(t)]
    return len(flagged) / len(texts), flagged[:3]


def test_test_logs_are_not_refused():
    rate, examples = _false_positive_rate(ordinary_logs())
    assert rate <= 0.01, examples


def test_commit_messages_are_not_refused():
    texts = secrets_bench.commit_messages(Path(REPO).parent / "shared" / secrets_bench.COMMITS_IN)
    if texts is None:
        pytest.skip(
            "no ../shared/data/commits-curl next to the clone: commit messages not measured"
        )
    rate, examples = _false_positive_rate(texts)
    assert len(texts) >= 1000 and rate <= 0.01, examples


def test_debian_package_descriptions_are_not_refused():
    # The bench's corpus when it has been fetched before (tests never fetch it).
    texts = secrets_bench.debian_descriptions(settings.MEMFLOW_DATA_DIR, fetch=False)
    if texts is None:
        pytest.skip("Debian's description index was never fetched (`memflow bench quality` does)")
    rate, examples = _false_positive_rate(texts)
    assert len(texts) >= 1000 and rate <= 0.01, examples


# --- every stored field is checked, nothing is written ---------------------------------------

TOKEN = "ghp_" + "Q9w8E7r6T5y4U3i2O1p0A9s8D7f6G5h4J3k2"


@pytest.mark.parametrize(
    "metadata",
    [
        {"deploy": {"note": f"push with {TOKEN}"}},
        {"password": "hunter2"},
        {"env": [{"PGPASSWORD": "S3cret!"}]},
        {TOKEN: "a key that is a token"},
    ],
)
def test_a_credential_in_metadata_is_refused_and_stores_nothing(client, metadata):
    answer = client.post(
        "/api/v1/workspaces/acme/memories/",
        {"text": "the deploy runs from CI", "metadata": metadata},
        format="json",
    )
    assert answer.status_code == 422, answer.content
    assert answer.json()["code"] == "secret_detected"
    assert "metadata" in answer.json()["detail"]
    bulk = client.post(
        "/api/v1/workspaces/acme/memories/bulk/",
        {"items": [{"text": "a harmless fact"}, {"text": "another", "metadata": metadata}]},
        format="json",
    )
    assert bulk.status_code == 422 and bulk.json()["index"] == 1
    assert not Memory.objects.exists()


def test_ordinary_metadata_is_kept(client):
    metadata = {"source": "ci", "token_count": "12", "secret_name": "prod-db", "author": "Jane"}
    answer = client.post(
        "/api/v1/workspaces/acme/memories/",
        {"text": "the deploy runs from CI", "metadata": metadata},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    assert Memory.objects.get().metadata == metadata


@pytest.mark.parametrize("secret", CREDENTIALS.values(), ids=CREDENTIALS.keys())
def test_update_and_supersede_refuse_a_credential(acme, secret):
    memory = services.memory_remember(
        workspace=acme, item=services.RememberInput(text="the deploy runs from CI")
    ).memory
    with pytest.raises(services.SecretDetected):
        services.memory_update(workspace=acme, memory=memory, text=text_with(secret))
    with pytest.raises(services.SecretDetected):
        services.memory_supersede(workspace=acme, memory=memory, text=text_with(secret))
    assert list(Memory.objects.values_list("text", flat=True)) == ["the deploy runs from CI"]
    assert Memory.objects.get().valid_to is None


@pytest.mark.parametrize("target", ["user", "memory"])
def test_core_memory_refuses_a_password(client, target):
    for fact in ("my password: S3cret!", "the db password is hunter2"):
        answer = client.post(
            f"/api/v1/workspaces/acme/core/{target}/",
            {"action": "add", "content": fact},
            format="json",
        )
        assert answer.status_code == 422, answer.content
        assert answer.json()["code"] == "secret_detected"
    assert not CoreMemory.objects.filter(content__contains="S3cret").exists()
    assert not CoreMemory.objects.filter(content__contains="hunter2").exists()
    assert core.clean_fact("the password policy asks for 12 characters")


def test_json_values_under_credential_keys_are_cut_out_of_the_session_log():
    env = {"PGPASSWORD": "hunter2", "GITHUB_TOKEN": "***", "MODE": "plan", "TOKEN_HINT": "none"}
    assert redact_json({"env": env}) == {
        "env": {
            "PGPASSWORD": "[redacted: password]",
            "GITHUB_TOKEN": "***",
            "MODE": "plan",
            "TOKEN_HINT": "none",
        }
    }
    assert find_secret_in_json({"a": [{"b": {"api_token": "Zq3" + "x8" * 10}}]})
    assert find_secret_in_json({"a": [1, None, {"b": "nothing here"}]}) is None
