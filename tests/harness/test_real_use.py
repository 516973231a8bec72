"""Claude Code as new users work with it (#35): memory never silently disappears.

Each scenario sets up what a person really has — the key in the config file
only, a server just restarted, a machine kept busy, a pasted stack trace, a
turn of many tool calls — and checks, in the real Claude Code, that memflow
still recalls and records, or says once where the person sees it why not.
"""

from __future__ import annotations

import re

import pytest

from tests.harness.conftest import Account, HarnessMaker, memflow_env
from tests.harness.fake_model import Text, strings
from tests.harness.test_claude_code import report_hook_seconds
from tests.memflow_site.helpers import Served

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
