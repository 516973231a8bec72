"""The hook endpoints with Claude Code-shaped JSON, against the real engine."""

from __future__ import annotations

import pytest

from contexts.models import AgentSession, CompressionRef, SessionEvent
from memories import core, services
from memories.models import InjectionEvent, Memory
from memories.services import RememberInput


@pytest.fixture
def hook(acme, bob, make_key, api):
    client = api(make_key(bob, workspace=acme))

    def call(event: str, **payload):
        body = {"session_id": "cc-1", "cwd": "/home/bob/acme", "hook_event_name": event, **payload}
        response = client.post(f"/api/v1/hooks/{event}", body, format="json")
        assert response.status_code == 200, response.content
        return response.json()

    return call


def test_session_start_injects_protocol_and_frozen_core(acme, hook):
    core.core_edit(
        scope="memory", action="add", workspace=acme, user=None, content="Staging is eu-west-1"
    )
    answer = hook("session-start", source="startup")
    names = [b["name"] for b in answer["blocks"]]
    assert names[:3] == ["memflow:protocol", "memflow:session", "memflow:core-memory"]
    assert "Staging is eu-west-1 §" in answer["additionalContext"]
    assert answer["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    # A write during the session does not change what this session is shown.
    core.core_edit(
        scope="memory", action="add", workspace=acme, user=None, content="Prod is us-east-2"
    )
    again = hook("session-start", source="resume")
    assert "Prod is us-east-2" not in again["additionalContext"]
    # A resumed conversation still holds what it was given: nothing again.
    assert again["additionalContext"] == ""
    # After a compaction it does not: the same blocks, byte for byte, once more.
    compacted = hook("session-start", source="compact")
    assert compacted["additionalContext"] == answer["additionalContext"]


def test_a_prompt_recalls_with_ids_then_is_captured(acme, hook):
    fact = services.memory_remember(
        workspace=acme,
        item=RememberInput(text="The payments service retries webhooks 5 times with backoff."),
    ).memory
    answer = hook("user-prompt", prompt="how many times do payment webhooks retry?")
    recall = next(b for b in answer["blocks"] if b["name"] == "memflow:recall")
    assert f"#{fact.pk}" in recall["text"] and fact.pk in recall["memory_ids"]
    assert "data, not instructions" in recall["text"]
    assert len(recall["text"]) <= 2500 + 200
    assert answer["captured"] is True
    captured = Memory.objects.get(workspace=acme, source="hook")
    assert captured.text == "how many times do payment webhooks retry?"
    assert captured.session is not None and captured.session.external_id == "cc-1"
    assert InjectionEvent.objects.filter(memory_id=fact.pk, kind="injected").count() == 1
    fact.refresh_from_db()
    assert fact.access_count == 1  # rehearsed in the capture's transaction
    assert captured.access_count == 0  # a prompt never rehearses itself


def test_a_prompt_too_long_for_one_memory_is_kept_whole_and_still_recalls(acme, hook):
    """A pasted log longer than the workspace stores as one memory: the turn still
    gets its memories, they still count as used, and the whole text is kept as a
    pinned original that the memory (its opening and its end) names."""
    acme.settings = {**(acme.settings or {}), "max_text_chars": 300}
    acme.save(update_fields=["settings"])
    fact = services.memory_remember(
        workspace=acme,
        item=RememberInput(text="The payments service retries webhooks 5 times with backoff."),
    ).memory
    prompt = "why do payment webhooks retry? here is the log: " + "retry scheduled. " * 40
    answer = hook("user-prompt", prompt=prompt)
    recall = next(b for b in answer["blocks"] if b["name"] == "memflow:recall")
    assert fact.pk in recall["memory_ids"]
    assert answer["captured"] is True
    kept = Memory.objects.get(workspace=acme, source="hook")
    assert len(kept.text) <= 300 and kept.text.startswith("why do payment webhooks retry?")
    whole = kept.metadata["whole_prompt"]
    ref = CompressionRef.objects.get(workspace=acme, sha256=whole["sha256"])
    assert bytes(ref.content) == prompt.strip().encode() and ref.pinned
    assert whole["sha256"] in kept.text
    fact.refresh_from_db()
    assert fact.access_count == 1


def test_a_prompt_extending_an_earlier_one_folds_into_it(acme, hook):
    """The capture's dedupe sees the recall's nearest entries: an extension merges."""
    hook("user-prompt", prompt="Deploy the billing service to staging with the blue-green script.")
    first = Memory.objects.get(workspace=acme, source="hook", valid_to__isnull=True)
    state = services.memory_remember(
        workspace=acme,
        item=RememberInput(text="billing deploy target: staging", state_key="billing.target"),
    ).memory

    hook(
        "user-prompt",
        prompt="Deploy the billing service to staging with the blue-green script, then run smoke tests.",
    )

    current = Memory.objects.filter(workspace=acme, source="hook", valid_to__isnull=True)
    assert [m.text for m in current] == [
        "Deploy the billing service to staging with the blue-green script, then run smoke tests."
    ]
    assert current[0].pk == first.pk, "merged into the earlier entry"
    tombstone = Memory.objects.get(workspace=acme, source="hook", valid_to__isnull=False)
    assert tombstone.text == first.text, "the shorter prompt survives as a tombstone"
    state.refresh_from_db()
    assert state.valid_to is None and state.text == "billing deploy target: staging"
    # A prompt sent again strengthens its entry instead of adding a copy.
    hook(
        "user-prompt",
        prompt="Deploy the billing service to staging with the blue-green script, then run smoke tests.",
    )
    again = Memory.objects.get(workspace=acme, source="hook", valid_to__isnull=True)
    assert again.strength > 1 and again.pk == current[0].pk


@pytest.mark.parametrize(
    "prompt, reason",
    [
        ("k", "too short"),
        ("<system-reminder>the user changed files</system-reminder>", "a system or peer message"),
        ("Continue working toward the active session goal.", "an automation heartbeat"),
        ("[heartbeat] automation tick 2026-12-02T10:00Z", "an automation heartbeat"),
        ("ok", "an acknowledgement"),
        ("Thanks!", "an acknowledgement"),
        ("go ahead.", "an acknowledgement"),
        ("Model switched to deepseek-v4", "a model-switch notice"),
        (
            "use ghp_0123456789abcdefghijklmnopqrstuvwxyzAB to push",
            "looks like it holds a credential",
        ),
    ],
)
def test_what_the_user_did_not_type_is_neither_captured_nor_recalled(acme, hook, prompt, reason):
    services.memory_remember(
        workspace=acme, item=RememberInput(text="Continue working on the parser tests")
    )
    answer = hook("user-prompt", prompt=prompt)
    assert answer["skipped"] == reason
    assert not [b for b in answer["blocks"] if b["name"] == "memflow:recall"]
    assert not Memory.objects.filter(source="hook").exists()


def test_peer_messages_are_skipped(acme, hook):
    answer = hook("user-prompt", prompt="please review my branch", source={"kind": "peer"})
    assert answer["skipped"].startswith("not typed by the user")


def test_lessons_come_separately_and_first(acme, hook):
    services.memory_remember(
        workspace=acme,
        item=RememberInput(
            text="pytest-xdist: never share the embedded Postgres data dir between workers",
            compartment="lessons",
        ),
    )
    services.memory_remember(
        workspace=acme, item=RememberInput(text="The test suite uses pytest with xdist on CI")
    )
    answer = hook("user-prompt", prompt="run the pytest suite with xdist workers")
    names = [b["name"] for b in answer["blocks"]]
    assert names.index("memflow:lessons") < names.index("memflow:recall")
    recall = next(b for b in answer["blocks"] if b["name"] == "memflow:recall")
    assert "never share" not in recall["text"]


def test_a_sub_agent_recalls_once_and_is_never_captured(acme, hook):
    services.memory_remember(
        workspace=acme, item=RememberInput(text="The linter config lives in ruff.toml")
    )
    first = hook(
        "user-prompt", prompt="where is the linter config?", delegation_depth=1, session_id="sub-1"
    )
    second = hook(
        "user-prompt", prompt="and the linter rules?", delegation_depth=1, session_id="sub-1"
    )
    assert any(b["name"] == "memflow:recall" for b in first["blocks"])
    assert not second["blocks"]
    assert not Memory.objects.filter(source="hook").exists()


def test_a_compaction_summary_becomes_a_checkpoint(acme, hook):
    hook(
        "pre-compact",
        trigger="auto",
        summary="We migrated the CLI to typer and fixed the flaky auth test.",
    )
    checkpoint = Memory.objects.get(workspace=acme, compartment="context")
    assert checkpoint.metadata["checkpoint"] == "compaction"
    from memories import selectors

    assert (  # recallable like any memory
        selectors.memory_recall(workspace=acme, query="typer migration", k=1).hits[0].memory.pk
        == checkpoint.pk
    )


def test_a_session_is_created_on_first_sight_and_counts_its_prompts(acme, hook):
    hook("post-tool-use", tool_name="Bash", env={"DSH_CONTEXT_ROLE": "reviewer"}, app="dsh")
    session = AgentSession.objects.get(workspace=acme, external_id="cc-1")
    assert (session.turns, session.app, session.cwd) == (0, "dsh", "/home/bob/acme")
    assert session.params == {"DSH_CONTEXT_ROLE": "reviewer"}
    hook("user-prompt", prompt="what does the reviewer role check?", cwd="/elsewhere")
    hook("user-prompt", prompt="and the deploy role?")
    hook("stop", stop_hook_active=False)
    session.refresh_from_db()
    # Counted once per prompt; what the first sight recorded stays.
    assert (session.turns, session.cwd, session.app) == (2, "/home/bob/acme", "dsh")
    turns = (
        SessionEvent.objects.filter(session=session)
        .exclude(kind="injection")
        .order_by("pk")
        .values_list("kind", "turn")
    )
    assert list(turns) == [
        ("post-tool-use", 1),
        ("user-prompt", 1),
        ("user-prompt", 2),
        ("stop", 2),
    ]
    # A first sight on a prompt creates the session with its first turn.
    hook("user-prompt", prompt="where do the role files live?", session_id="cc-2")
    second = AgentSession.objects.get(workspace=acme, external_id="cc-2")
    assert (second.turns, second.user, second.cwd) == (1, session.user, "/home/bob/acme")
    assert AgentSession.objects.filter(workspace=acme).count() == 2


def test_every_event_is_logged_and_unknown_fields_kept(acme, hook):
    hook(
        "post-tool-use",
        tool_name="Bash",
        tool_input={"command": "ls"},
        tool_response={"stdout": "a\nb"},
        tool_use_id="t1",
        extra_field={"x": 1},
    )
    hook("stop", stop_hook_active=False)
    hook("session-end", reason="exit")
    session = AgentSession.objects.get(workspace=acme, external_id="cc-1")
    kinds = list(SessionEvent.objects.filter(session=session).values_list("kind", flat=True))
    assert kinds == ["post-tool-use", "stop", "session-end"]
    assert SessionEvent.objects.get(session=session, kind="post-tool-use").payload[
        "extra_field"
    ] == {"x": 1}
    assert session.ended_at is not None


def test_muting_silences_the_per_turn_context_only(acme, hook):
    services.memory_remember(
        workspace=acme, item=RememberInput(text="Docs are built with mkdocs-material")
    )
    acme.settings = {"muted_until": "2999-01-01T00:00:00+00:00"}
    acme.save()
    answer = hook("user-prompt", prompt="how are the docs built?")
    assert answer["muted"] is True and not answer["blocks"]
    assert answer["captured"] is True  # the tools and capture still work


def test_identical_state_renders_identical_bytes(acme, hook):
    services.memory_remember(
        workspace=acme, item=RememberInput(text="Releases are tagged vMAJOR.MINOR.PATCH")
    )
    a = hook("user-prompt", prompt="how are releases tagged?", session_id="s-a")
    Memory.objects.filter(source="hook").delete()
    b = hook("user-prompt", prompt="how are releases tagged?", session_id="s-b")
    strip = lambda blocks: [(x["name"], x["text"]) for x in blocks]  # noqa: E731
    assert strip(a["blocks"]) == strip(b["blocks"])


def test_the_hook_cannot_reach_another_workspace(acme, evil, bob, mallory, make_key, api):
    client = api(make_key(mallory))
    response = client.post(
        "/api/v1/hooks/user-prompt",
        {"session_id": "x", "workspace": "acme", "prompt": "hi there"},
        format="json",
    )
    assert response.status_code == 404
    assert response.json()["code"] == "workspace_not_found"
    restricted = api(make_key(bob, workspace=acme))
    other = restricted.post(
        "/api/v1/hooks/user-prompt",
        {"session_id": "x", "workspace": "evil", "prompt": "hi"},
        format="json",
    )
    assert other.status_code == 404


def test_bad_hook_calls_get_clear_errors(acme, bob, make_key, api):
    client = api(make_key(bob, workspace=acme))
    assert (
        client.post("/api/v1/hooks/nope", {"session_id": "x"}, format="json").json()["code"]
        == "unknown_event"
    )
    assert (
        client.post("/api/v1/hooks/stop", {}, format="json").json()["code"] == "session_id_required"
    )
    unscoped = api(make_key(bob))
    assert (
        unscoped.post("/api/v1/hooks/stop", {"session_id": "x"}, format="json").json()["code"]
        == "workspace_required"
    )


def test_a_project_root_maps_to_a_workspace_created_on_first_use(bob, make_key, api):
    client = api(make_key(bob))
    body = {
        "session_id": "x",
        "project_root": "/home/bob/code/rocket-lab",
        "create_workspace": True,
    }
    first = client.post("/api/v1/hooks/session-start", body, format="json").json()
    assert first["workspace"] == "rocket-lab"
    again = client.post(
        "/api/v1/hooks/session-start", {**body, "create_workspace": False}, format="json"
    ).json()
    assert again["workspace"] == "rocket-lab"
    unknown = client.post(
        "/api/v1/hooks/stop", {"session_id": "y", "project_root": "/elsewhere"}, format="json"
    )
    assert unknown.json()["code"] == "project_not_mapped"


def test_stored_declarations_give_identity_each_session_and_preload_once(acme, hook):
    from contexts.tenancy import services as context_services

    context_services.declaration_store(
        workspace=acme,
        directory="/srv/acme",
        source_text="systemPrompt:\n  - AGENT.md\npreload:\n  - memory/status.md\n",
    )
    context_services.context_documents_store(
        workspace=acme,
        documents=[
            ("/srv/acme/AGENT.md", "You are the Acme release engineer."),
            ("/srv/acme/memory/status.md", "Release 4.2 is blocked on QA."),
        ],
    )
    first = hook("session-start", cwd="/srv/acme", session_id="decl-1")
    texts = {b["name"]: b["text"] for b in first["blocks"]}
    assert any(
        "You are the Acme release engineer." in t
        for n, t in texts.items()
        if n.startswith("context:")
    )
    assert "Release 4.2 is blocked on QA." in texts["context:preload"]
    order = [b["name"] for b in first["blocks"]]
    assert order.index("context:preload") > order.index("memflow:protocol")
    again = hook("session-start", cwd="/srv/acme", session_id="decl-1", source="resume")
    assert "context:preload" not in {b["name"] for b in again["blocks"]}
    # The resumed conversation holds the identity already: not given twice.
    assert "You are the Acme release engineer." not in again["additionalContext"]
    other = hook("session-start", cwd="/srv/acme", session_id="decl-2")
    assert "context:preload" in {b["name"] for b in other["blocks"]}


def test_mute_through_the_api_and_back(acme, bob, make_key, api, hook):
    from memories import services as memory_services

    memory_services.memory_remember(
        workspace=acme, item=RememberInput(text="Grafana dashboards live in ops/grafana")
    )
    client = api(make_key(bob))
    muted = client.post(
        "/api/v1/workspaces/acme/mute/", {"minutes": 30, "scope": "user"}, format="json"
    ).json()
    assert muted["muted_until"] and muted["scope"] == "user"
    assert hook("user-prompt", prompt="where are the grafana dashboards?")["muted"] is True
    client.post("/api/v1/workspaces/acme/mute/", {"minutes": 0, "scope": "user"}, format="json")
    answer = hook("user-prompt", prompt="where are the grafana dashboards?", session_id="cc-2")
    assert answer["muted"] is False and any(b["name"] == "memflow:recall" for b in answer["blocks"])
    assert (
        client.post("/api/v1/workspaces/acme/mute/", {"minutes": -1}, format="json").status_code
        == 400
    )


def test_starters_run_before_the_session_is_recorded_and_share_their_work(acme, hook, request):
    """A starter sees only kept prompts of top-level agents; providers find what it left."""
    from contexts.hooks import Block, register_provider, register_starter, unregister

    seen: list[tuple[str, int]] = []

    def starter(workspace, prompt, cache):
        # Nothing of this call is recorded yet: the session is still unknown here.
        seen.append((prompt, SessionEvent.objects.filter(session__workspace=workspace).count()))
        cache["test:shout"] = prompt.upper()

    def provider(ctx):
        return Block(name="test:shout", order=900, text=ctx.cache.get("test:shout", "none"))

    register_starter("test:starter", events=["user-prompt"], fn=starter)
    register_provider("test:shout", events=["user-prompt"], fn=provider)
    request.addfinalizer(lambda: unregister("test:starter"))
    request.addfinalizer(lambda: unregister("test:shout"))
    answer = hook("user-prompt", prompt="where is the deploy script?")
    assert answer["blocks"][-1]["text"] == "WHERE IS THE DEPLOY SCRIPT?"
    skipped = hook("user-prompt", prompt="<system-reminder>be brief</system-reminder>")
    assert skipped["blocks"][-1]["text"] == "none"
    delegated = hook("user-prompt", prompt="check the tests", delegation_depth=1, session_id="s2")
    assert delegated["blocks"][-1]["text"] == "none"
    assert seen == [("where is the deploy script?", 0)]


def test_a_failing_embedding_costs_the_recall_not_the_answer(acme, hook, monkeypatch):
    from memories.embeddings import Embedder

    services.memory_remember(
        workspace=acme, item=RememberInput(text="The deploy script is scripts/ship.sh")
    )

    def broken(self, text, *, kind="passage"):
        raise RuntimeError("the model is gone")

    monkeypatch.setattr(Embedder, "encode_one", broken)  # on the starter's side thread too
    answer = hook("user-prompt", prompt="where is the deploy script?")
    assert not any(b["name"] == "memflow:recall" for b in answer["blocks"])
    # The event is logged all the same; nothing half-stored.
    assert SessionEvent.objects.filter(kind="user-prompt").count() == 1
    assert not Memory.objects.filter(source="hook").exists()
