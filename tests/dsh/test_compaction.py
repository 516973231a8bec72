"""A compaction in one long headless turn: memflow's handoff notes stand in for the history."""

from __future__ import annotations

from pathlib import Path

from contexts.models import AgentSession
from tests.dsh.conftest import Account, DshMaker, memflow_env
from tests.dsh.fake_deepseek import Text, ToolCall
from tests.memflow_site.helpers import Served

# dsh compacts when a request nears the model's window: a small window, as a
# user with a small model would have, makes one long turn compact.
SMALL_WINDOW = """\
- id: llm-deepseek
  config:
    models:
      - id: deepseek-v4-flash
        contextWindow: 12000
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
    # Each step edits a file and prints a page of output, so the history grows.
    script = [
        ToolCall(
            "bash",
            {
                "command": f"echo '{step}' >> heron-notes.txt; seq 1 400 | sed 's/^/config line /'",
                "description": step,
            },
            text=step,
        )
        for step in STEPS
    ]

    run = h.run(STEPS[0], [*script, Text("All done.")], patch=patch)

    assert run.returncode == 0, run.stderr
    session = AgentSession.objects.get(workspace=account.workspace, app="dsh")
    notes = account.api.get(f"sessions/{session.external_id}/summaries/").json()
    assert notes["count"] > 0, notes
    later = [r for r in h.model.main_requests() if "<flowctx-handoff-note" in r.text()]
    assert later, "no request after the compaction carried memflow's handoff notes"
