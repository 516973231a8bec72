"""Layered handoff-note summaries: planning, folding a long session, supersession, the LLM path."""

from __future__ import annotations

import itertools

import pytest
from django.utils import timezone

from contexts.flowctx import planning, services
from contexts.flowctx.notes import SECTIONS, note_sections
from contexts.hooks.pipeline import event_tokens
from contexts.models import AgentSession, SessionEvent, SummaryNode
from tests.flowctx.chat_server import ChatServer, Reply

# --- planning ---------------------------------------------------------------------------------


def turns(*tokens: float) -> list[planning.Turn]:
    return [planning.Turn(number=n + 1, tokens=t) for n, t in enumerate(tokens)]


SMALL = planning.FoldSettings(leaf_tokens=100, keep_turns=2, fanout=3, max_depth=1)


def test_a_leaf_ends_at_the_turn_that_reaches_its_size():
    step = planning.plan_next(turns=turns(40, 40, 40, 40, 10, 10), active=[], settings=SMALL)
    assert step == planning.Step(depth=0, start=1, end=3, children=False)


def test_the_last_turns_are_never_folded():
    # Turns 5 and 6 are kept; 1-4 total only 80 tokens.
    assert (
        planning.plan_next(turns=turns(20, 20, 20, 20, 500, 500), active=[], settings=SMALL) is None
    )
    forced = planning.plan_next(
        turns=turns(20, 20, 20, 20, 500, 500), active=[], settings=SMALL, force=True
    )
    assert forced == planning.Step(depth=0, start=1, end=4, children=False)


def test_a_compaction_in_one_long_turn_folds_it_by_its_steps():
    # A headless run is one turn: nothing lies before the kept turns.
    long = [planning.Turn(number=1, tokens=60, steps=8)]
    assert planning.plan_next(turns=long, active=[], settings=SMALL) is None
    forced = planning.plan_next(turns=long, active=[], settings=SMALL, force=True)
    assert forced == planning.Step(depth=0, start=1, end=1, children=False)
    # A short exchange at a compaction is left whole, as before.
    short = [planning.Turn(number=1, tokens=30, steps=1), planning.Turn(number=2, tokens=30)]
    assert planning.plan_next(turns=short, active=[], settings=SMALL, force=True) is None


def test_the_leaf_of_a_turn_that_grew_is_folded_again_at_the_next_compaction():
    leaf = planning.Node(depth=0, start=1, end=1, tokens=60)
    grown = [planning.Turn(number=1, tokens=90, steps=12)]
    step = planning.plan_next(turns=grown, active=[leaf], settings=SMALL, force=True)
    assert step == planning.Step(depth=0, start=1, end=1, children=False)
    same = [planning.Turn(number=1, tokens=60, steps=8)]
    assert planning.plan_next(turns=same, active=[leaf], settings=SMALL, force=True) is None


def test_folding_resumes_after_the_covered_turns():
    active = [planning.Node(depth=0, start=1, end=3)]
    step = planning.plan_next(turns=turns(*[60] * 8), active=active, settings=SMALL)
    assert step == planning.Step(depth=0, start=4, end=5, children=False)


def test_enough_same_depth_nodes_condense_one_level_up_but_not_past_max_depth():
    leaves = [planning.Node(depth=0, start=s, end=s + 1) for s in (1, 3, 5)]
    step = planning.plan_next(turns=turns(*[1] * 8), active=leaves, settings=SMALL)
    assert step == planning.Step(depth=1, start=1, end=6, children=True)
    tops = [planning.Node(depth=1, start=s, end=s) for s in (1, 2, 3)]
    assert planning.plan_next(turns=turns(*[1] * 8), active=tops, settings=SMALL) is None


# --- a synthetic 200-turn session ---------------------------------------------------------------


def make_session(workspace, user, n_turns: int, *, chars_per_tool: int = 8000) -> AgentSession:
    """A session whose every turn is a prompt, a Bash call (a failure every 10th turn) and a stop."""
    session = AgentSession.objects.create(
        workspace=workspace, user=user, external_id="long-1", app="claude-code", turns=n_turns
    )
    events = []
    for turn in range(1, n_turns + 1):
        failing = turn % 10 == 0
        payloads = [
            ("user-prompt", {"prompt": f"step {turn}: make test_step_{turn} pass"}),
            (
                "post-tool-use",
                {
                    "tool_name": "Bash",
                    "tool_input": {"command": f"pytest tests/test_step_{turn}.py"},
                    "tool_response": {
                        # Exactly chars_per_tool characters: 2,000 tokens by the estimate.
                        "stdout": (
                            (f"tests/test_step_{turn}.py ." * 400)[: chars_per_tool - 60]
                            + ("\nE   AssertionError: boom\n1 failed" if failing else "\n1 passed")
                        ).ljust(chars_per_tool),
                        "stderr": "",
                        "exit_code": 1 if failing else 0,
                    },
                },
            ),
            ("stop", {"last_assistant_message": f"Turn {turn} done."}),
        ]
        for kind, payload in payloads:
            events.append(
                SessionEvent(
                    session=session,
                    kind=kind,
                    payload=payload,
                    turn=turn,
                    tokens=int(event_tokens(payload)),
                    at=timezone.now(),
                )
            )
    SessionEvent.objects.bulk_create(events)
    return session


def test_a_200_turn_session_folds_into_leaves_and_one_condensed_node(acme, bob):
    session = make_session(acme, bob, 200)
    generation = services.summaries_request_fold(session=session)
    written = services.summaries_fold(session=session, generation=generation)
    nodes = SummaryNode.objects.filter(session=session)
    leaves = sorted((n for n in nodes if n.depth == 0), key=lambda n: n.start_turn)
    # ~2,000 tokens a turn, 40,000 a leaf: 20 turns each; turns 199-200 stay verbatim.
    assert [n.node_id for n in leaves[:2]] == ["d0-1-20", "d0-21-40"]
    assert all(b.start_turn == a.end_turn + 1 for a, b in itertools.pairwise(leaves))
    assert leaves[0].start_turn == 1 and leaves[-1].end_turn <= 198
    assert all(n.tokens >= 40000 for n in leaves)
    # Six leaves condensed into d1-1-120; they are no longer active.
    top = nodes.get(depth=1)
    assert top.node_id == "d1-1-120"
    assert sorted(c.node_id for c in top.children.all()) == sorted(n.node_id for n in leaves[:6])
    active = [n.node_id for n in SummaryNode.objects.filter(session=session, parent__isnull=True)]
    assert active == ["d1-1-120", "d0-121-140", "d0-141-160", "d0-161-180"]
    assert len(written) == nodes.count() == 10
    # Every note is a handoff note with the six sections, and keeps failures.
    for node in nodes:
        assert list(note_sections(node.text)) == list(SECTIONS)
        assert node.builder == "extractive"
    assert "test_step_10" in note_sections(leaves[0].text)["FAILED APPROACHES"]


def test_a_newer_fold_supersedes_a_running_one(acme, bob):
    session = make_session(acme, bob, 100)
    first = services.summaries_request_fold(session=session)
    calls = []

    def builder(events):
        calls.append(len(events))
        if len(calls) == 2:  # a newer turn ends while the second note is being written
            services.summaries_request_fold(session=session)
        return services._default_builder(acme)(events)

    written = services.summaries_fold(session=session, generation=first, builder=builder)
    assert [n.node_id for n in written] == ["d0-1-20"]
    assert SummaryNode.objects.filter(session=session).count() == 1
    # The newer generation resumes where the stored nodes end.
    session.refresh_from_db()
    rest = services.summaries_fold(session=session, generation=session.fold_generation)
    assert [n.node_id for n in rest][:1] == ["d0-21-40"]
    # And a stale generation writes nothing at all.
    assert services.summaries_fold(session=session, generation=first) == []


def test_with_an_llm_configured_the_notes_come_from_it(acme, bob, settings):
    session = make_session(acme, bob, 23)
    note = "\n\n".join(f"## {s}\nfrom the model: {s.lower()}" for s in SECTIONS)
    with ChatServer(replies=[Reply(chunks=(note[:40], note[40:]))]) as server:
        settings.MEMFLOW_LLM_URL = server.url
        settings.MEMFLOW_LLM_MODEL = "qwen-test"
        written = services.summaries_fold(
            session=session, generation=services.summaries_request_fold(session=session)
        )
        assert server.seen and server.seen[0].body["model"] == "qwen-test"
    assert [n.node_id for n in written] == ["d0-1-20"]
    assert written[0].builder == "llm"
    assert "from the model: failed approaches" in written[0].text


def test_with_the_llm_down_the_extractive_builder_takes_over(acme, bob, settings):
    session = make_session(acme, bob, 23)
    settings.MEMFLOW_LLM_URL = "http://127.0.0.1:9/v1"
    settings.MEMFLOW_LLM_RETRIES = 0
    written = services.summaries_fold(
        session=session, generation=services.summaries_request_fold(session=session)
    )
    assert written[0].builder == "extractive"


# --- over REST and through the hooks ----------------------------------------------------------------


@pytest.fixture
def client(acme, bob, make_key, api):
    return api(make_key(bob, workspace=acme))


def test_the_api_lists_active_notes_and_returns_one(client, acme, bob):
    session = make_session(acme, bob, 150)
    services.summaries_fold(
        session=session, generation=services.summaries_request_fold(session=session)
    )
    base = "/api/v1/workspaces/acme/sessions/long-1/summaries/"
    active = client.get(base).json()["results"]
    assert [n["node"] for n in active] == ["d1-1-120", "d0-121-140"]
    assert all(n["active"] for n in active)
    everything = client.get(base + "?all=1").json()["results"]
    assert len(everything) == 8
    assert {n["parent"] for n in everything if n["depth"] == 0 and n["end_turn"] <= 120} == {
        "d1-1-120"
    }
    one = client.get(base + "d0-21-40/").json()
    assert one["text"].startswith("## TASK / GOAL")
    missing = client.get(base + "d0-2-3/")
    assert missing.status_code == 404 and missing.json()["code"] == "node_not_found"
    nobody = client.get("/api/v1/workspaces/acme/sessions/nobody/summaries/")
    assert nobody.status_code == 404 and nobody.json()["code"] == "session_not_found"


def test_asking_for_a_fold_queues_one_with_a_new_generation(
    client, acme, bob, django_capture_on_commit_callbacks
):
    from django_q.models import OrmQ

    session = make_session(acme, bob, 30)
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.post(
            "/api/v1/workspaces/acme/sessions/long-1/summaries/fold/", {}, format="json"
        )
    assert answer.status_code == 202
    session.refresh_from_db()
    assert answer.json()["generation"] == session.fold_generation == 1
    queued = [task.task for task in OrmQ.objects.all()]
    assert [(t["func"], t["args"]) for t in queued] == [
        ("contexts.flowctx.tasks.summaries_fold", (session.pk, 1, False))
    ]


def hook(client, event, **payload):
    body = {"session_id": "long-1", "hook_event_name": event, **payload}
    response = client.post(f"/api/v1/hooks/{event}", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_pre_compact_shows_each_active_note_as_a_placeholder(client, acme, bob):
    session = make_session(acme, bob, 45)
    services.summaries_fold(
        session=session, generation=services.summaries_request_fold(session=session)
    )
    answer = hook(client, "pre-compact", trigger="auto")
    handoffs = [b for b in answer["blocks"] if b["name"].startswith("flowctx:handoff")]
    assert len(handoffs) == 2
    assert handoffs[0]["text"].startswith('<flowctx-handoff-note node="d0-1-20" turns="1-20"')
    # How to read it in full: a command the model can run (no MCP server here).
    assert (
        "memflow retrieve --workspace acme --session long-1 --node d0-1-20" in (handoffs[0]["text"])
    )
    # After the compaction the harness restarts the session: the notes come back.
    again = hook(client, "session-start", source="compact")
    assert [b["name"] for b in again["blocks"] if b["name"].startswith("flowctx:handoff")] == [
        b["name"] for b in handoffs
    ]
    # The compaction also asked for a forced fold of what is left.
    session.refresh_from_db()
    assert session.fold_generation == 2


def test_a_turn_end_queues_a_fold_only_when_a_leaf_is_due(client, acme, bob):
    hook(client, "user-prompt", prompt="start the refactor")
    hook(client, "stop")
    session = AgentSession.objects.get(external_id="long-1")
    assert session.fold_generation == 0
    acme.settings = {"summary_leaf_tokens": 50, "summary_keep_turns": 1}
    acme.save()
    hook(client, "post-tool-use", tool_name="Bash", tool_response={"stdout": "x " * 200})
    hook(client, "user-prompt", prompt="now the tests")
    hook(client, "stop")
    session.refresh_from_db()
    assert session.turns == 2
    assert session.fold_generation == 1
    events = SessionEvent.objects.filter(session=session).exclude(kind="injection")
    assert [e.turn for e in events] == [1, 1, 1, 2, 2]
    assert 100 <= events.get(kind="post-tool-use").tokens <= 110  # the output, and a little JSON
