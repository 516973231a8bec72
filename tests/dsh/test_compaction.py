"""A compaction in one long headless turn: memflow's handoff notes stand in for the history."""

from __future__ import annotations

import time
from pathlib import Path

from django.db import connection

from contexts.models import AgentSession, SessionEvent
from tests.dsh.conftest import Account, DshMaker, memflow_env
from tests.dsh.fake_deepseek import Text, ToolCall
from tests.memflow_site.helpers import Served

# Only turns a fold that never comes into a failure.
GUARD_SECONDS = 90

# A long turn is folded at a compaction once it has this many tool steps
# (contexts/flowctx/planning.py, FoldSettings.leaf_steps).
FOLDED_FROM_STEPS = 5

# dsh compacts when a request nears the model's window: a small window, as a
# user with a small model would have, makes one long turn compact.
SMALL_WINDOW = """\
- id: llm-deepseek
  config:
    models:
      - id: deepseek-v4-flash
        contextWindow: 6000
"""

STEPS = [
    "Refactor the Heron config loader into two modules: parsing and validation",
    "The validation module must reject ports above 65535 with a clear message",
    "Keep the old load_config name as a thin wrapper for one release",
    "Move the defaults into heron/config/defaults.py",
    "Add a test for the wrapper's deprecation warning",
    "Document the new modules in docs/config.md",
    "Run the config tests",
    "Fix the flake in test_ports",
]


def test_a_compaction_in_one_long_turn_has_handoff_notes(
    live: Served, account: Account, dsh: DshMaker, tmp_path: Path
) -> None:
    h = dsh(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_bundle()
    patch = tmp_path / "small-window.yml"
    patch.write_text(SMALL_WINDOW)
    # Each step edits a file and prints a page of output (under the size memflow
    # projects), so the history grows.
    script = [
        ToolCall(
            "bash",
            {
                "command": f"echo '{step}' >> heron-notes.txt; seq 1 150 | sed 's/^/config line /'",
                "description": step,
            },
            text=step,
        )
        for step in STEPS
    ]

    gave_up: list[bool] = []

    def summarized(replies: int) -> None:
        """A real model takes seconds to summarize; memflow's worker folds meanwhile.

        From five tool steps on, a compaction must have a note to stand in for
        them: wait for it (once: a note that never comes fails the test below).
        """
        if replies <= FOLDED_FROM_STEPS or gave_up:
            return
        deadline = time.monotonic() + GUARD_SECONDS
        try:
            while time.monotonic() < deadline:
                sessions = AgentSession.objects.filter(workspace=account.workspace, app="dsh")
                if any(
                    account.api.get(f"sessions/{s.external_id}/summaries/").json()["count"]
                    for s in sessions
                ):
                    return
                time.sleep(0.2)
            gave_up.append(True)
        finally:
            connection.close()  # this thread's own

    h.model.on_compaction = summarized
    run = h.run(STEPS[0], [*script, Text("All done.")], patch=patch)

    assert run.returncode == 0, run.stderr
    session = AgentSession.objects.get(workspace=account.workspace, app="dsh")
    kinds = list(SessionEvent.objects.filter(session=session).values_list("kind", flat=True))
    assert "pre-compact" in kinds, kinds  # dsh compacted, and said so
    notes = account.api.get(f"sessions/{session.external_id}/summaries/").json()
    assert notes["count"] > 0, (kinds, notes)
    later = [r for r in h.model.main_requests() if "<flowctx-handoff-note" in r.text()]
    assert later, "no request after the compaction carried memflow's handoff notes"
