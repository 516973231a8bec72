"""What memflow's bundle costs a headless dsh run: figures, not assertions.

    .venv/bin/python -m tests.dsh.bench_hooks [RUNS]

Runs a one-prompt headless `dsh` turn with one bash call RUNS times (default
5) in each of: no bundle, a healthy `memflow serve` (embedded Postgres in a
temporary data dir, with its worker), a hung server (accepts, never answers)
and a dead one (nothing listens), the bundle added as the README says and
the default hook budget. Prints one JSON line per case: the median and
slowest whole run (process start to exit), the median and slowest time from
the start to the model's first request (what a session start costs), and the
median and 95th percentile span of each extension point the bundle hooks,
as the bundle itself measures it inside dsh (MEMFLOW_DSH_TIMINGS): the
session start's own work, the assembly waterfall, pre-step, post-execute,
turn end and the exit. Needs `make harness-dsh`.
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

from tests.dsh.conftest import Dsh, dsh_path  # noqa: E402
from tests.dsh.fake_deepseek import Text, ToolCall, fake_deepseek  # noqa: E402
from tests.memflow_site.helpers import env_for, free_port, serving  # noqa: E402


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def case(label: str, root: Path, runs: int, settings: dict[str, str], bundle: bool = True) -> None:
    spans: dict[str, list[float]] = {}
    walls, firsts = [], []
    for n in range(runs):
        where = root / f"{label.replace(' ', '-')}-{n}"
        where.mkdir()
        timings = where / "timings.jsonl"
        with fake_deepseek() as model:
            h = Dsh(
                dsh=dsh_path(),
                root=where,
                model=model,
                memflow_env={**settings, "MEMFLOW_DSH_TIMINGS": str(timings)},
            )
            if bundle:
                h.install_bundle()
            started = time.monotonic()
            run = h.run(
                "list it",
                [ToolCall("bash", {"command": "ls /", "description": "list"}), Text("Listed.")],
            )
            walls.append(run.seconds)
            firsts.append(model.main_requests()[0].at - started)
        if run.returncode != 0:
            raise SystemExit(f"{label}: dsh failed:\n{run.stderr}")
        if timings.exists():
            for line in timings.read_text().splitlines():
                entry = json.loads(line)
                spans.setdefault(entry["point"], []).append(entry["ms"] / 1000)
    print(
        json.dumps(
            {
                "case": label,
                "runs": runs,
                "run_median_s": round(statistics.median(walls), 3),
                "run_max_s": round(max(walls), 3),
                "first_request_median_s": round(statistics.median(firsts), 3),
                "first_request_max_s": round(max(firsts), 3),
                "point_median_s": {
                    p: round(statistics.median(s), 3) for p, s in sorted(spans.items())
                },
                "point_p95_s": {p: round(percentile(s, 0.95), 3) for p, s in sorted(spans.items())},
            }
        ),
        flush=True,
    )


def main(runs: int) -> None:
    if not os.access(dsh_path(), os.X_OK):
        raise SystemExit(f"no dsh at {dsh_path()}: run `make harness-dsh`")
    root = Path(tempfile.mkdtemp(prefix="memflow-dsh-bench-"))
    try:
        with serving(env_for(root / "data")) as served:
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
            case("no bundle", root, runs, {**base, "MEMFLOW_URL": served.url}, bundle=False)
            case("healthy memflow", root, runs, {**base, "MEMFLOW_URL": served.url})

            # Connections complete in the kernel's backlog and are never answered.
            listener = socket.socket()
            listener.bind(("127.0.0.1", 0))
            listener.listen(256)
            hung = f"http://127.0.0.1:{listener.getsockname()[1]}"
            case("hung server", root, runs, {**base, "MEMFLOW_URL": hung})
            listener.close()
            dead = f"http://127.0.0.1:{free_port()}"
            case("dead server", root, runs, {**base, "MEMFLOW_URL": dead})
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
