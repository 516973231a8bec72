"""What memflow's hooks cost a turn inside the real Claude Code: figures, not assertions.

    .venv/bin/python -m tests.harness.bench_hooks [RUNS]

Runs a one-prompt `claude -p` turn with one Bash call RUNS times (default 7)
in each of: no memflow hooks, a healthy `memflow serve` (embedded Postgres in
a temporary data dir) with the hooks `install-hooks --claude-code --project`
writes (http hooks where no disk is needed) and with `--command-hooks`, a
hung server (accepts, never answers) and a dead one (nothing listens), each
with both sets. Prints one JSON line per case: the median and slowest whole
run (process start to exit), Claude Code's own `duration_ms`, and the median
and 95th percentile span of each hook event (its hook_started to its
hook_response in Claude Code's stream). Needs `make harness-cli`.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
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
from tests.harness.fake_model import Text, ToolUse, fake_model  # noqa: E402
from tests.memflow_site.helpers import env_for, free_port, serving  # noqa: E402


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def case(
    label: str,
    root: Path,
    runs: int,
    settings: dict[str, str],
    hooks: bool = True,
    flags: tuple[str, ...] = ("--project",),
) -> None:
    spans: dict[str, list[float]] = {}
    walls, turns = [], []
    for n in range(runs):
        where = root / f"{label.replace(' ', '-')}-{n}"
        where.mkdir()
        with fake_model() as model:
            harness = Harness(claude=claude_path(), root=where, model=model, memflow_env=settings)
            if hooks:
                harness.install_hooks(*flags)
            started = time.monotonic()
            run = harness.run("list it", [ToolUse("Bash", {"command": "ls /"}), Text("Listed.")])
            walls.append(time.monotonic() - started)
        if run.result.get("subtype") != "success":
            raise SystemExit(f"{label}: claude failed:\n{run.stderr}")
        turns.append(run.result["duration_ms"] / 1000)
        for event, seconds in run.hook_seconds().items():
            spans.setdefault(event, []).extend(seconds)
    print(
        json.dumps(
            {
                "case": label,
                "runs": runs,
                "run_median_s": round(statistics.median(walls), 3),
                "run_max_s": round(max(walls), 3),
                "claude_duration_median_s": round(statistics.median(turns), 3),
                "hook_median_s": {
                    e: round(statistics.median(s), 3) for e, s in sorted(spans.items())
                },
                "hook_p95_s": {e: round(percentile(s, 0.95), 3) for e, s in sorted(spans.items())},
            }
        ),
        flush=True,
    )


COMMANDS = ("--project", "--command-hooks")


def main(runs: int) -> None:
    if not os.access(claude_path(), os.X_OK):
        raise SystemExit(f"no Claude Code at {claude_path()}: run `make harness-cli`")
    root = Path(tempfile.mkdtemp(prefix="memflow-hook-bench-"))
    try:
        with serving(env_for(root / "data"), "--no-worker") as served:
            deadline = time.monotonic() + 180
            while httpx.get(f"{served.url}/api/v1/health").json()["embeddings"] != "ready":
                if time.monotonic() > deadline:
                    raise SystemExit("the embedding model never loaded")
                time.sleep(0.3)
            credentials = (root / "data" / "first-run-credentials.txt").read_text()
            key = next(
                line.split(": ", 1)[1]
                for line in credentials.splitlines()
                if line.startswith("api key:")
            )
            base = {"MEMFLOW_API_KEY": key, "MEMFLOW_WORKSPACE": "default"}
            case("no hooks", root, runs, {**base, "MEMFLOW_URL": served.url}, hooks=False)
            healthy = {**base, "MEMFLOW_URL": served.url}
            case("healthy memflow", root, runs, healthy)
            case("healthy, commands", root, runs, healthy, flags=COMMANDS)

            # Connections complete in the kernel's backlog and are never answered.
            listener = socket.socket()
            listener.bind(("127.0.0.1", 0))
            listener.listen(256)
            hung = f"http://127.0.0.1:{listener.getsockname()[1]}"
            case("hung server", root, runs, {**base, "MEMFLOW_URL": hung})
            case("hung, commands", root, runs, {**base, "MEMFLOW_URL": hung}, flags=COMMANDS)
            listener.close()
            dead = f"http://127.0.0.1:{free_port()}"
            case("dead server", root, runs, {**base, "MEMFLOW_URL": dead})
            case("dead, commands", root, runs, {**base, "MEMFLOW_URL": dead}, flags=COMMANDS)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
