"""Claude Code as new users work with it (#35): memory never silently disappears.

Each scenario sets up what a person really has — the key in the config file
only, a server just restarted, a machine kept busy, a pasted stack trace, a
turn of many tool calls — and checks, in the real Claude Code, that memflow
still recalls and records, or says once where the person sees it why not.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from contexts.models import SessionEvent
from tests.harness.conftest import Account, HarnessMaker, memflow_env
from tests.harness.fake_model import Reply, Text, ToolUse, strings
from tests.harness.test_claude_code import hook_types, report_hook_seconds
from tests.memflow_site.helpers import (
    MEMFLOW,
    Served,
    database_url_for_tests,
    env_for,
    serving,
)

pytestmark = pytest.mark.django_db(transaction=True)


def stack_trace(size: int) -> str:
    """A pasted Python traceback of about `size` bytes: many frames, then the error."""
    frames: list[str] = []
    n = 0
    while sum(map(len, frames)) < size:
        frames.append(
            f'  File "/srv/app/billing/worker_{n % 97}.py", line {100 + n}, in charge_step_{n}\n'
            f"    result = gateway.submit(invoice_{n}, retries=attempt_{n % 7})\n"
        )
        n += 1
    return (
        "the billing worker crashed, why?\n\nTraceback (most recent call last):\n"
        + "".join(frames)
        + "billing.errors.GatewayTimeout: charge gateway did not answer in 30 s\n"
    )


def later_activity(account: Account) -> None:
    """Enough later entries that the session-start restore pack (the most recent
    ones) leaves older facts to the prompt's recall."""
    account.api.post(
        "/memories/bulk/",
        json={"items": [{"text": f"Unrelated note {n}: sprint {n} planning"} for n in range(24)]},
    ).raise_for_status()


def test_a_pasted_44_kb_stack_trace_is_recalled_with_and_captured_whole(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    fact = account.api.post(
        "/memories/",
        json={
            "text": "GatewayTimeout in the billing worker: the charge gateway needs a VPN route."
        },
    ).json()
    later_activity(account)
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_hooks()
    prompt = stack_trace(44_000)
    assert len(prompt.encode()) > 44_000

    run = h.run(prompt, [Text("The gateway timed out.")])
    report_hook_seconds("44 KB stack trace", run)

    assert run.result["subtype"] == "success", run.stderr
    by_event = {hook["hook_event"]: hook for hook in run.hooks()}
    assert by_event["UserPromptSubmit"]["outcome"] == "success", by_event["UserPromptSubmit"]
    said = "\n".join(strings(h.model.main_requests()[0].body["messages"]))
    recall = said[said.index("<memflow-recall") :]
    assert f"#{fact['id']}" in recall
    # What the person pasted is kept, whole.
    memories = account.api.get("/memories/?status=all&limit=50").json()["results"]
    captured = [m for m in memories if m["source"] == "hook"]
    assert len(captured) == 1
    kept = account.api.get(f"/memories/{captured[0]['id']}/").json()["text"]
    assert kept.startswith("the billing worker crashed, why?")
    assert kept.rstrip().endswith("charge gateway did not answer in 30 s")
    sha = re.search(r"stored as ref ([0-9a-f]{64})", kept).group(1)  # type: ignore[union-attr]
    assert account.api.get(f"/compression/{sha}/").content == prompt.strip().encode()


def status(h, env: dict[str, str]) -> dict:
    """`memflow status --json` in the project, as the person would run it from `env`."""
    done = subprocess.run(
        [MEMFLOW, "status", "--json"],
        cwd=h.project,
        env={**h.env(), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return json.loads(done.stdout)


def test_hooks_work_from_a_shell_that_has_the_key_only_in_the_config_file(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    fact = account.api.post(
        "/memories/", json={"text": "The billing worker retries failed charges 3 times."}
    ).json()
    later_activity(account)
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    config = h.home / ".config" / "memflow" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(
        json.dumps({"url": live.url, "api_key": account.key, "workspace": account.workspace.slug})
    )
    h.install_hooks()  # from the shell where the key is exported too
    # A new terminal, an IDE: nothing exported, the config file alone.
    h.memflow_env = {"MEMFLOW_HOOK_TIMEOUT": "5"}
    assert status(h, {})["problems"] == []

    prompt = "how does the billing worker handle failed charges?"
    run = h.run(prompt, [Text("It retries three times.")])

    assert run.result["subtype"] == "success", run.stderr
    said = "\n".join(strings(h.model.main_requests()[0].body["messages"]))
    assert f"#{fact['id']}" in said[said.index("<memflow-recall") :]
    memories = account.api.get("/memories/?status=all&limit=50").json()["results"]
    assert [m["text"] for m in memories if m["source"] == "hook"] == [prompt]
    kinds = SessionEvent.objects.exclude(kind="injection").values_list("kind", flat=True)
    assert {"session-start", "user-prompt", "stop", "session-end"} <= set(kinds)


def test_status_names_http_hooks_that_will_post_without_the_key(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    h = harness(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_hooks()  # the key exported, no config file: http hooks
    assert hook_types(h)["UserPromptSubmit"] == "http"
    # What install wrote is right for the shell it ran in.
    said = status(h, {})
    assert said["problems"] == [] and said["warnings"] == [], said

    # Later the key moves to the config file, and a new shell has no export.
    config = h.home / ".config" / "memflow" / "config.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"api_key": account.key}))
    said = status(h, {"MEMFLOW_API_KEY": ""})

    [problem] = [p for p in said["problems"] if "http hooks" in p]
    assert "UserPromptSubmit" in problem and "401" in problem
    assert "memflow install-hooks --claude-code --project" in problem
    # Doing what it says makes the hooks work from that shell.
    h.memflow_env = {k: v for k, v in h.memflow_env.items() if k != "MEMFLOW_API_KEY"}
    h.install_hooks()
    assert set(hook_types(h).values()) == {"command"}
    assert status(h, {})["problems"] == []


@contextmanager
def busy_machine(spinners: int = 2) -> Iterator[None]:
    """Processes spinning on every core (started here, stopped after): a loaded machine."""
    spinning = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(spinners)
    ]
    try:
        yield
    finally:
        for process in spinning:
            process.kill()
            process.wait()


def eventually(check: Callable[[], bool], guard: float = 180) -> bool:
    """Poll `check` until it holds; the guard turns a hang into a failure, not a speed limit."""
    deadline = time.monotonic() + guard
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def hook_texts(account: Account) -> list[str]:
    memories = account.api.get("/memories/?status=all&limit=50").json()["results"]
    return [m["text"] for m in memories if m["source"] == "hook"]


def said_to_person(run) -> list[str]:
    """The systemMessages memflow's hooks gave the person, in order."""
    said = []
    for hook in run.hooks():
        with contextlib.suppress(ValueError):
            message = json.loads(hook.get("stdout") or "{}").get("systemMessage")
            if message:
                said.append(message)
    return said


def test_right_after_a_restart_on_a_busy_machine_prompts_are_answered_and_kept(
    harness: HarnessMaker, live: Served, account: Account, tmp_path: Path
) -> None:
    fact = account.api.post(
        "/memories/", json={"text": "The billing worker retries failed charges 3 times."}
    ).json()
    later_activity(account)
    env = env_for(tmp_path / "restarted", database_url=database_url_for_tests())
    prompt = "how does the billing worker handle failed charges?"
    with busy_machine(), serving(env, "--no-worker") as restarted:
        health = httpx.get(f"{restarted.url}/api/v1/health", timeout=30).json()
        # Live (it answers) before it is ready (its embedding model loads).
        assert health["live"] is True and health["ready"] is False, health
        h = harness(memflow_env(restarted.url, account.key, account.workspace.slug, budget=""))
        h.install_hooks()
        run = h.run(prompt, [Text("It retries three times.")])

        assert run.result["subtype"] == "success", run.stderr
        by_event = {hook["hook_event"]: hook for hook in run.hooks()}
        # Answered within its 1 s, by the prompt's words, rather than cut off.
        assert by_event["UserPromptSubmit"]["outcome"] == "success", by_event
        said = "\n".join(strings(h.model.main_requests()[0].body["messages"]))
        assert f"#{fact['id']}" in said[said.index("<memflow-recall") :]
        # The person is told once why recall is by words only for now.
        told = [m for m in said_to_person(run) if "still loading" in m]
        assert len(told) == 1, said_to_person(run)
        # And what they typed is kept once the model is there.
        assert eventually(lambda: hook_texts(account) == [prompt]), hook_texts(account)
        ready = httpx.get(f"{restarted.url}/api/v1/health?ready=1", timeout=30)
        assert ready.status_code == 200 and ready.json()["ready"] is True


def test_on_a_busy_machine_a_slow_hook_skips_no_one(
    harness: HarnessMaker, live: Served, account: Account
) -> None:
    # A budget a busy machine runs hooks out of (the default 1 s, scaled to this test).
    h = harness(memflow_env(live.url, account.key, account.workspace.slug, budget="0.25"))
    h.install_hooks("--project", "--command-hooks")
    prompts = ["first session: list the build directory", "second session: list it again"]
    script: list[Text | ToolUse | Reply] = [ToolUse("Bash", {"command": "ls /"}), Text("Listed.")]
    # Two sessions at once, as in two terminals.
    with busy_machine(spinners=4), ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda prompt: h.run(prompt, script), prompts))

    for run in runs:
        assert run.result["subtype"] == "success", run.stderr
        # However slow, the person hears of it once a session at most.
        assert len(said_to_person(run)) <= 1, said_to_person(run)
    # A hook that ran out of time in the first session did not cost the second its memory.
    assert eventually(lambda: sorted(hook_texts(account)) == sorted(prompts)), hook_texts(account)
    state = h.home / ".local" / "state" / "memflow" / "hook-skip.json"
    assert not state.exists() or live.url not in json.loads(state.read_text())
