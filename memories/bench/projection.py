"""`memflow bench projection`: flowctx's tool-result projection on real tool outputs.

Builds the corpus (`corpus.build_corpus`: commands run on this machine),
projects every sample with the default budget, and reports how much is kept
(projected/original characters), whether what a reader needs next survived
(`Sample.must_keep`, verbatim), and how long it took. Pure Python: no database.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from contexts.flowctx.corpus import Sample, build_corpus
from contexts.flowctx.projection import KINDS, Projection, detect_kind, project

TARGETS = {"median_ratio": 0.30, "survival": 0.99, "test_failure_survival": 1.0, "ms_per_mb": 25.0}
TOOL_NAME = "Bash"  # every sample was a shell command, as an agent would run it
RUNS = 3  # each sample is timed this many times and the fastest run counts


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def bench_projection(*, workdir: Path | None = None) -> dict[str, Any]:
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="memflow-projection-") as temporary:
            return bench_projection(workdir=Path(temporary))
    say(f"building the corpus in {workdir} (real commands, about half a minute)…")
    samples = build_corpus(workdir=workdir, progress=say)
    say(f"projecting {len(samples)} samples, best of {RUNS} runs each…")
    rows = [_measure(sample) for sample in samples]
    result = _figures(rows)
    say(format_projection(result))
    return result


def _measure(sample: Sample) -> dict[str, Any]:
    best = float("inf")
    projection: Projection | None = None
    for _ in range(RUNS):
        started = time.perf_counter()
        projection = project(sample.text, tool_name=TOOL_NAME, exit_code=sample.exit_code)
        best = min(best, time.perf_counter() - started)
    # None keeps the original: nothing is lost and nothing is saved.
    shown = sample.text if projection is None else projection.text
    lost = [item for item in sample.must_keep if item not in shown]
    megabytes = len(sample.text.encode("utf-8")) / 1_000_000
    return {
        "name": sample.name,
        "kind": sample.kind,
        "detected": detect_kind(sample.text, tool_name=TOOL_NAME),
        "projected_as": projection.kind if projection else None,
        "chars": len(sample.text),
        "ratio": len(shown) / len(sample.text),
        "must_keep": len(sample.must_keep),
        "survived": len(sample.must_keep) - len(lost),
        "lost": lost,
        "ms": best * 1000,
        "megabytes": megabytes,
        "test_failure": sample.kind == "test" and sample.exit_code != 0,
    }


def _survival(rows: list[dict[str, Any]]) -> float | None:
    total = sum(row["must_keep"] for row in rows)
    return sum(row["survived"] for row in rows) / total if total else None


def _ms_per_mb(rows: list[dict[str, Any]]) -> float:
    megabytes = sum(row["megabytes"] for row in rows)
    return sum(row["ms"] for row in rows) / megabytes if megabytes else 0.0


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] if ordered else 0.0


def _figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_kind[row["kind"]].append(row)
    per_kind = {
        kind: {
            "samples": len(group),
            "median_ratio": round(statistics.median(row["ratio"] for row in group), 3),
            "survival": _rounded(_survival(group)),
            "detected_right": sum(row["detected"] == kind for row in group),
            "ms_per_mb": round(_ms_per_mb(group), 1),
            "megabytes": round(sum(row["megabytes"] for row in group), 2),
        }
        for kind in KINDS
        if (group := by_kind.get(kind))
    }
    failures = [row for row in rows if row["test_failure"]]
    return {
        "bench": "projection",
        "samples": len(rows),
        "megabytes": round(sum(row["megabytes"] for row in rows), 2),
        "median_ratio": round(statistics.median(row["ratio"] for row in rows), 3) if rows else None,
        "survival": _rounded(_survival(rows)),
        "test_failure_survival": _rounded(_survival(failures)),
        "ms_per_mb": round(_ms_per_mb(rows), 1),
        "p95_sample_ms_per_mb": round(_p95([r["ms"] / r["megabytes"] for r in rows]), 1),
        "targets": TARGETS,
        "per_kind": per_kind,
        "per_sample": [
            {key: _rounded(value) for key, value in row.items() if key != "test_failure"}
            for row in rows
        ],
    }


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, list):
        return value[:5]  # a few lost strings are enough to see why
    return value


def _percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def format_projection(result: dict[str, Any]) -> str:
    """The per-kind table and the headline figures, for people."""
    lines = [
        f"{'kind':<8} {'n':>3} {'ratio':>6} {'survival':>9} {'detected':>9} {'ms/MB':>7} {'MB':>6}"
    ]
    for kind, row in result["per_kind"].items():
        lines.append(
            f"{kind:<8} {row['samples']:>3} {row['median_ratio']:>6.3f} "
            f"{_percent(row['survival']):>9} {row['detected_right']:>5}/{row['samples']:<3} "
            f"{row['ms_per_mb']:>7.1f} {row['megabytes']:>6.2f}"
        )
    lines.append(
        f"all      {result['samples']:>3} {result['median_ratio'] or 0:>6.3f} "
        f"{_percent(result['survival']):>9} {'':>9} {result['ms_per_mb']:>7.1f} "
        f"{result['megabytes']:>6.2f}"
    )
    lines.append(
        f"test failures: survival {_percent(result['test_failure_survival'])}; "
        f"p95 per sample {result['p95_sample_ms_per_mb']} ms/MB"
    )
    for row in result["per_sample"]:
        if row["lost"]:
            lines.append(
                f"  lost in {row['name']}: {row['must_keep'] - row['survived']} — {row['lost']}"
            )
    return "\n".join(lines)
