"""Claude Code as new users work with it (#35): memory never silently disappears.

Each scenario sets up what a person really has — the key in the config file
only, a server just restarted, a machine kept busy, a pasted stack trace, a
turn of many tool calls — and checks, in the real Claude Code, that memflow
still recalls and records, or says once where the person sees it why not.
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from contexts.models import SessionEvent

from tests.harness.conftest import Account, HarnessMaker, memflow_env
from tests.harness.fake_model import Text, strings
from tests.harness.test_claude_code import hook_types, report_hook_seconds
from tests.memflow_site.helpers import MEMFLOW, Served

pytestmark = pytest.mark.django_db(transaction=True)


def stack_trace(size: int) -> str:
    """A pasted Python traceback of about `size` bytes: many frames, then the error."""
    frames = []
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
        json={"text": "GatewayTimeout in the billing worker: the charge gateway needs a VPN route."},
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
        json.dumps(
            {"url": live.url, "api_key": account.key, "workspace": account.workspace.slug}
        )
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
