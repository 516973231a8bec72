"""What memflow's hooks cost a tool-heavy turn in the real Claude Code: figures, not assertions.

    .venv/bin/python -m tests.harness.bench_tool_turn [RUNS] [TOOLS]

One `claude -p` turn of TOOLS Bash calls (default 40, each `true`), RUNS
times (default 3) in each of: no memflow hooks, the hooks `install-hooks
--claude-code --project` writes with the key exported, and `--command-hooks`
(what a key kept in the config file gets), against a healthy `memflow
serve` (embedded Postgres in a temporary data dir). The cases take turns
run by run, so a machine that gets busier costs each alike. Prints one JSON
line per case: the median and slowest whole run, its ratio to the median
without memflow, and the median PostToolUse span. Needs `make harness-cli`.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memflow_site.settings")
django.setup()  # the harness helpers import memflow's models

import httpx  # noqa: E402

from tests.harness.conftest import Harness, claude_path  # noqa: E402
from tests.harness.fake_model import Reply, Text, ToolUse, fake_model  # noqa: E402
from tests.memflow_site.helpers import env_for, serving  # noqa: E402

CASES: dict[str, tuple[str, ...] | None] = {
    "no hooks": None,
    "install-hooks (key exported)": ("--project",),
    "--command-hooks": ("--project", "--command-hooks"),
}


def one_run(where: Path, settings: dict[str, str], flags: tuple[str, ...] | None, tools: int):
    where.mkdir()
    with fake_model() as model:
        harness = Harness(claude=claude_path(), root=where, model=model, memflow_env=settings)
        if flags is not None:
            harness.install_hooks(*flags)
        script: list[Text | ToolUse | Reply] = [
            *(ToolUse("Bash", {"command": "true"}) for _ in range(tools)),
            Text("Done."),
        ]
        started = time.monotonic()
        run = harness.run("run the checks", script)
        wall = time.monotonic() - started
    if run.result.get("subtype") != "success":
        raise SystemExit(f"claude failed:\n{run.stderr}")
    return wall, run.hook_seconds().get("PostToolUse", [])


def main(runs: int, tools: int) -> None:
    if not os.access(claude_path(), os.X_OK):
        raise SystemExit(f"no Claude Code at {claude_path()}: run `make harness-cli`")
    root = Path(tempfile.mkdtemp(prefix="memflow-tool-turn-"))
    try:
        with serving(env_for(root / "data"), "--no-worker") as served:
            deadline = time.monotonic() + 180
            while not httpx.get(f"{served.url}/api/v1/health").json().get("ready"):
                if time.monotonic() > deadline:
                    raise SystemExit("the embedding model never loaded")
                time.sleep(0.3)
            credentials = (root / "data" / "first-run-credentials.txt").read_text()
            key = next(
                line.split(": ", 1)[1]
                for line in credentials.splitlines()
                if line.startswith("api key:")
            )
            settings = {
                "MEMFLOW_URL": served.url,
                "MEMFLOW_API_KEY": key,
                "MEMFLOW_WORKSPACE": "default",
            }
            walls: dict[str, list[float]] = {c: [] for c in CASES}
            spans: dict[str, list[float]] = {c: [] for c in CASES}
            for n in range(runs):
                for label, flags in CASES.items():
                    where = root / f"{label.split()[0].strip('-')}-{n}"
                    wall, span = one_run(where, settings, flags, tools)
                    walls[label].append(wall)
                    spans[label].extend(span)
            base = statistics.median(walls["no hooks"])
            for label in CASES:
                print(
                    json.dumps(
                        {
                            "case": label,
                            "tools": tools,
                            "runs": runs,
                            "run_median_s": round(statistics.median(walls[label]), 2),
                            "run_max_s": round(max(walls[label]), 2),
                            "ratio_to_no_hooks": round(statistics.median(walls[label]) / base, 2),
                            "post_tool_use_median_s": round(statistics.median(spans[label]), 3)
                            if spans[label]
                            else None,
                        }
                    ),
                    flush=True,
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 3,
        int(sys.argv[2]) if len(sys.argv) > 2 else 40,
    )
