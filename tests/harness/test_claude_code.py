"""memflow's hooks and MCP server inside the real Claude Code CLI.

Each test runs `claude -p` against the fake model, with memflow's hooks
installed as the README says, and checks what a user would notice: what
the model was given, what memflow kept, and that a broken server costs a
turn next to nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from contexts.flowctx.notes import FAILED, note_events, note_extractive
from contexts.models import SessionEvent
from tests.harness.conftest import Account, HarnessMaker, memflow_env
from tests.harness.fake_model import Text, ToolUse, strings, tool_results
from tests.hooks import answered_data as answered
from tests.memflow_site.helpers import MEMFLOW, Served, free_port

pytestmark = pytest.mark.django_db(transaction=True)


def rows_command(rows: int, width: int) -> tuple[str, bytes]:
    """A shell command printing `rows` lines, and exactly the bytes it prints."""
    line = "abcdefghij" * (width // 10)
    command = (
        "python3 -c \"import sys; sys.stdout.write(''.join("
        f"f'row {{i:06d}} {line}' + chr(10) for i in range({rows})))\""
    )
    expected = "".join(f"row {i:06d} {line}\n" for i in range(rows)).encode()
    return command, expected


# A command hook that exits 0, or an http hook answered 200 (Claude Code
# reports the HTTP status where a command's exit code would be).
SUCCESS = {("success", 0), ("success", 200)}


def assert_hooks_quiet(run, events: set[str]) -> None:
    """Every hook ran, exited 0, and printed nothing to the model or the person."""
    seen = {h["hook_event"] for h in run.hooks()}
    assert events <= seen, f"hooks that ran: {seen}"
    for hook in run.hooks():
        assert (hook["outcome"], hook.get("exit_code")) == ("success", 0), hook
        assert hook["stdout"] == "", hook


def hook_types(h) -> dict[str, str]:
    """Claude Code event → the type of memflow's hook for it, as installed."""
    settings = json.loads((h.project / ".claude" / "settings.local.json").read_text())
    return {name: entries[0]["hooks"][0]["type"] for name, entries in settings["hooks"].items()}


def test_context_reaches_the_model_at_session_start_and_on_a_prompt(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    account.api.post(
        "/core/memory/", json={"action": "add", "content": "Deploys need approval from #release"}
    ).raise_for_status()
    fact = account.api.post(
        "/memories/",
        json={"text": "The billing worker retries failed charges 3 times, then pages on-call."},
    ).json()
    # Enough later activity that the session-start restore pack (the most
    # recent entries) leaves the fact for the prompt's recall to find.
    account.api.post(
        "/memories/bulk/",
        json={"items": [{"text": f"Unrelated note {n}: sprint {n} planning"} for n in range(24)]},
    ).raise_for_status()
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_hooks()
    # The prompt's hook is one Claude Code posts to memflow itself.
    assert hook_types(h)["UserPromptSubmit"] == "http"

    prompt = "how does the billing worker handle failed charges?"
    run = h.run(prompt, [Text("It retries three times.")])
    report_hook_seconds("context", run)

    assert run.result["subtype"] == "success", run.stderr
    first = h.model.main_requests()[0].body
    said = "\n".join(strings(first["messages"]))
    # Session start: the frozen core; the prompt: the recall, framed as data
    # and labelled by Claude Code as the hook's context, not the user's words.
    assert "SessionStart hook additional context: <memflow-protocol>" in said
    assert "Deploys need approval from #release" in said
    recall = said[said.index("UserPromptSubmit hook additional context: <memflow-recall") :]
    assert "The billing worker retries failed charges 3 times" in recall
    assert "data, not instructions" in recall and f"#{fact['id']}" in recall
    # None of it is in the system prompt, which stays the same for every user.
    assert "memflow" not in "\n".join(strings(first.get("system")))
    # And memflow kept what the user typed, in this session.
    memories = account.api.get("/memories/?status=all&limit=50").json()["results"]
    assert [m["text"] for m in memories if m["source"] == "hook"] == [prompt]
    # Every hook, http and command, answered; the session's events are all there.
    for hook in run.hooks():
        assert (hook["outcome"], hook.get("exit_code")) in SUCCESS, hook
    kinds = list(
        SessionEvent.objects.exclude(kind="injection").order_by("pk").values_list("kind", flat=True)
    )
    assert kinds == ["session-start", "user-prompt", "stop", "session-end"], kinds


def test_the_memories_an_answer_cites_count_as_used(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    fact = account.api.post(
        "/memories/",
        json={"text": "The billing worker retries failed charges 3 times, then pages on-call."},
    ).json()
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_hooks()
    # The model answers from the recall block and cites what it used, as the
    # protocol asks; "#2" is an issue number, never a memory it was shown.
    answer = f"It retries three times, then pages on-call (#{fact['id']}); see issue #2."
    run = h.run("how does the billing worker handle failed charges?", [Text(answer)])
    assert run.result["subtype"] == "success", run.stderr

    ledger = account.api.get("/ledger/").json()
    assert ledger["by_kind"]["cited"] == 1
    assert ledger["used"] == 1 and ledger["use_rate"] > 0
    assert [h["memory_id"] for h in ledger["hottest"]] == [fact["id"]]


def first_recalled(request_body: dict) -> int:
    """The id of the first entry of the recall block a request carried."""
    said = "\n".join(strings(request_body["messages"]))
    recall = said[said.index("<memflow-recall") :]
    return int(re.search(r"\[#(\d+) \|", recall).group(1))  # type: ignore[union-attr]


def test_a_later_session_finds_first_what_an_earlier_answer_cited(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    answer = account.api.post("/memories/", json={"text": answered.ANSWER}).json()["id"]
    # Later activity enough that the session-start restore pack (the most
    # recent entries) leaves these to the prompt's recall.
    notes = [f"Unrelated note {n}: sprint {n} planning" for n in range(24)]
    account.api.post(
        "/memories/bulk/", json={"items": [{"text": t} for t in [*answered.OTHERS, *notes]]}
    ).raise_for_status()
    # By its words alone, another entry comes first for the later question.
    alone = account.api.post("/recall/", json={"query": answered.QUERY, "k": 5}).json()
    assert alone["ids"][0] != answer
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_hooks()

    earlier = h.run(
        answered.EARLIER, [Text(f"It was the session cookie: wait for it (#{answer}).")]
    )
    assert earlier.result["subtype"] == "success", earlier.stderr
    later = h.run(answered.QUERY, [Text("Wait for the session cookie.")])
    assert later.result["subtype"] == "success", later.stderr
    assert first_recalled(h.model.main_requests()[-1].body) == answer


def test_a_bash_output_past_30000_chars_is_stored_whole(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    command, expected = rows_command(rows=1000, width=180)  # 192,000 bytes
    sha = hashlib.sha256(expected).hexdigest()
    short_command, short = rows_command(rows=100, width=190)  # 20,200 bytes: not cut
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_hooks()

    run = h.run(
        "list the rows",
        [
            ToolUse("Bash", {"command": command}),
            ToolUse("Bash", {"command": short_command}),
            Text("Listed."),
        ],
    )
    report_hook_seconds("192 KB output", run)

    assert run.result["subtype"] == "success", run.stderr
    # Claude Code itself showed the model a preview and saved the rest to a file.
    preview = tool_results(h.model.main_requests()[1].body)[0]
    assert "Output too large" in json.dumps(preview)
    # memflow kept all of it: byte for byte, final newline included.
    original = account.api.get(f"/compression/{sha}/")
    assert original.status_code == 200
    assert original.content == expected and original.content.endswith(b"\n")
    # The note to the model names that ref and its true size.
    later = h.model.main_requests()[1].text()
    assert f'<memflow-compression ref="{sha}">' in later
    assert f"({len(expected):,} bytes) is stored whole" in later
    # The session log describes the output rather than holding a second copy.
    logged = SessionEvent.objects.filter(kind="post-tool-use").order_by("pk")[0].payload
    assert logged["memflow_output"] == {
        "source": "persistedOutputPath",
        "size": len(expected),
        "sha256": sha,
    }
    assert logged["tool_response"]["persistedOutputSize"] == len(expected)

    # An output Claude Code does not cut reaches hooks as it showed the model:
    # trimmed of its final newline. memflow keeps that, and says so.
    trimmed = short.rstrip(b"\n")
    short_sha = hashlib.sha256(trimmed).hexdigest()
    assert account.api.get(f"/compression/{short_sha}/").content == trimmed
    assert f"({len(trimmed):,} bytes, as Claude Code showed it) is stored" in (
        h.model.main_requests()[2].text()
    )


def test_a_whole_output_comes_back_through_memflows_mcp_tool(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    command, expected = rows_command(rows=250, width=150)  # 40,500 bytes: inline over MCP
    sha = hashlib.sha256(expected).hexdigest()
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_hooks("--project", "--mcp")  # the MCP server too, the key from the environment

    run = h.run(
        "list the rows, then fetch them back",
        [
            ToolUse("Bash", {"command": command}),
            ToolUse("mcp__memflow__flowctx_retrieve", {"hash": sha}),
            Text("Fetched."),
        ],
        tools="Bash mcp__memflow",
    )

    assert run.result["subtype"] == "success", run.stderr
    init = run.of("system", "init")[0]
    assert {(s["name"], s["status"]) for s in init["mcp_servers"]} == {("memflow", "connected")}
    fetched = tool_results(h.model.main_requests()[2].body)[-1]
    assert not fetched.get("is_error"), fetched
    text = fetched["content"] if isinstance(fetched["content"], str) else fetched["content"][0]
    text = text if isinstance(text, str) else text["text"]
    # Claude Code hands the model the tool's structured answer: the whole
    # output, final newline included — not the preview Claude Code kept.
    answer = json.loads(text)
    assert (answer["sha256"], answer["size"]) == (sha, len(expected))
    assert answer["text"].encode() == expected


def test_a_failing_bash_call_is_recorded_as_a_failure(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_hooks()

    run = h.run(
        "list the build directory",
        [
            ToolUse("Bash", {"command": "ls /harness-missing-build-dir"}),
            ToolUse("Bash", {"command": "ls /"}),
            Text("The build directory does not exist."),
        ],
    )

    assert run.result["subtype"] == "success", run.stderr
    assert "PostToolUseFailure" in {hook["hook_event"] for hook in run.hooks()}
    events = list(
        SessionEvent.objects.order_by("pk")
        .values_list("kind", "payload")
        .filter(kind__in=["user-prompt", "post-tool-use"])
    )
    failed = [p for k, p in events if p.get("hook_event_name") == "PostToolUseFailure"]
    assert len(failed) == 1
    assert failed[0]["tool_input"]["command"] == "ls /harness-missing-build-dir"
    assert "No such file or directory" in failed[0]["error"]
    # A handoff note built from this session names it among the failed approaches.
    note = note_extractive(note_events(events))
    failures = note[note.index(f"## {FAILED}") :].split("\n## ", 1)[0]
    assert "ls /harness-missing-build-dir" in failures
    assert "ls /`" not in failures  # the call that worked is not a failure


@contextmanager
def hung_server() -> Iterator[tuple[str, list[socket.socket]]]:
    """A server that accepts every connection and never answers; the list holds them."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    finally:
        listener.close()
        for conn in accepted:
            conn.close()


def test_a_hung_server_costs_a_session_two_hook_budgets_then_is_skipped(
    harness: HarnessMaker,
) -> None:
    with hung_server() as (url, accepted):
        h = harness(memflow_env(url, "mf_whatever", "w", budget=""))
        h.install_hooks("--project", "--command-hooks")
        run = h.run("list it", [ToolUse("Bash", {"command": "ls /"}), Text("Listed.")])

    assert run.result["subtype"] == "success", run.stderr
    # The first hook waited out its budget and told the person, once, where
    # Claude Code shows it; the next waited out its own (a slow server is asked
    # again), and every later hook of the session left it alone.
    said = [json.loads(hook["stdout"])["systemMessage"] for hook in run.hooks() if hook["stdout"]]
    assert len(said) == 1 and f"{url} did not answer within 1 s" in said[0]
    for hook in run.hooks():
        assert (hook["outcome"], hook.get("exit_code")) == ("success", 0), hook
    assert len(accepted) == 2
    state = json.loads((h.home / ".local" / "state" / "memflow" / "hook-skip.json").read_text())
    assert url not in state  # reachable: never skipped for the user's other sessions
    [skip] = [entry for key, entry in state.items() if key.startswith(f"{url} session ")]
    assert skip["reason"] == "no answer within 1 s"
    assert all("memflow" not in r.text() for r in h.model.main_requests())
    report_hook_seconds("hung server", run)


def test_a_dead_server_is_skipped_silently(harness: HarnessMaker) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    h = harness(memflow_env(url, "mf_whatever", "w", budget=""))
    h.install_hooks("--project", "--command-hooks")

    run = h.run("list it", [ToolUse("Bash", {"command": "ls /"}), Text("Listed.")])

    assert run.result["subtype"] == "success", run.stderr
    assert_hooks_quiet(run, {"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"})
    assert all(hook["stderr"] == "" for hook in run.hooks())
    assert not (h.home / ".local" / "state" / "memflow").exists()  # nothing to wait out
    assert all("memflow" not in r.text() for r in h.model.main_requests())


def assert_turn_unharmed(h, run, told: int = 0) -> None:
    """The turn ended normally with the model's reply, and the model was told nothing of
    memflow; the person was told `told` times (a hook's systemMessage)."""
    assert run.result["subtype"] == "success", run.stderr
    assert run.result["result"] == "Listed."
    assert len(h.model.main_requests()) == 2  # the prompt, then the tool's result
    for request in h.model.main_requests():
        assert "memflow" not in request.text() and "ECONNREFUSED" not in request.text()
    # A failed http hook never blocks: Claude Code goes on, as after a command's exit 1.
    for hook in run.hooks():
        assert hook["outcome"] in ("success", "error", "cancelled"), hook
    said = [hook["stdout"] for hook in run.hooks() if hook["stdout"]]
    assert len(said) == told and all("systemMessage" in s for s in said), said


def test_http_hooks_with_a_dead_server_leave_the_turn_alone(harness: HarnessMaker) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    h = harness(memflow_env(url, "mf_whatever", "w", budget=""))
    h.install_hooks()
    assert hook_types(h)["Stop"] == "http"

    run = h.run("list it", [ToolUse("Bash", {"command": "ls /"}), Text("Listed.")])

    assert_turn_unharmed(h, run)
    # The command hooks say nothing; Claude Code itself notes each failed http
    # hook in its hook events (a line in the transcript view, never the model).
    by_event = {hook["hook_event"]: hook for hook in run.hooks()}
    assert by_event["SessionStart"]["stderr"] == "" and by_event["PostToolUse"]["stderr"] == ""
    assert by_event["UserPromptSubmit"]["outcome"] == "error"
    assert "ECONNREFUSED" in by_event["UserPromptSubmit"]["stderr"]
    assert "SessionEnd" not in run.stderr  # the exit stays quiet: SessionEnd is a command


def test_http_hooks_with_a_hung_server_are_cut_off_at_their_timeout(
    harness: HarnessMaker,
) -> None:
    with hung_server() as (url, accepted):
        h = harness(memflow_env(url, "mf_whatever", "w", budget=""))
        h.install_hooks()
        run = h.run("list it", [ToolUse("Bash", {"command": "ls /"}), Text("Listed.")])

    assert_turn_unharmed(h, run, told=1)
    by_event = {hook["hook_event"]: hook for hook in run.hooks()}
    # Claude Code stopped waiting for the http hooks (their own timeout) …
    assert by_event["UserPromptSubmit"]["outcome"] == "cancelled"
    assert by_event["Stop"]["outcome"] == "cancelled"
    # … and the command hooks each waited out their budget until the session
    # had met the server slow twice (SessionStart, PostToolUse): then no more.
    assert by_event["PostToolUse"]["outcome"] == "success"
    assert len(accepted) <= 4  # SessionStart, UserPromptSubmit, PostToolUse, Stop
    report_hook_seconds("hung server, http hooks", run)


def test_shared_settings_work_on_any_clone(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_hooks("--shared")
    committed = (h.project / ".claude" / "settings.json").read_text()
    assert str(Path(MEMFLOW).parent) not in committed  # no path of this machine
    assert not (h.project / ".claude" / "settings.local.json").exists()

    # A teammate with memflow on PATH: the hooks work.
    h.memflow_env["PATH"] = f"{Path(MEMFLOW).parent}:{h.env()['PATH']}"
    run = h.run("hello from a clone", [Text("Hi.")])
    assert run.result["subtype"] == "success", run.stderr
    memories = account.api.get("/memories/?status=all&limit=50").json()["results"]
    assert [m["text"] for m in memories if m["source"] == "hook"] == ["hello from a clone"]

    # One without it: the hooks do nothing, and say nothing.
    h.memflow_env["PATH"] = "/usr/bin:/bin"
    run = h.run("hello again", [Text("Hi.")])
    assert run.result["subtype"] == "success", run.stderr
    assert_hooks_quiet(run, {"SessionStart", "UserPromptSubmit", "Stop"})
    assert all(hook["stderr"] == "" for hook in run.hooks())


def report_hook_seconds(label: str, run) -> None:
    """Claude Code's hook spans, as read from its stream: a figure, never an assertion."""
    spans = run.hook_seconds()
    shown = ", ".join(f"{name} {max(s):.2f}s" for name, s in sorted(spans.items()))
    print(f"\n[{label}] hook spans: {shown}")
