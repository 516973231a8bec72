"""The quality bench on any labelled set, through the bulk and the single-remember paths.

A set is loaded into its own workspace per path: `bulk` remembers it in
batches (`memory_remember_bulk`, as an import does), `single` one text at a
time (`memory_remember`, as `POST memories/` does). Both take the vectors
from the on-disk cache (the single-text ONNX path gives the same vectors as
a batch), so the two differ only in how they decide. Each query then goes
through each arm alone, plain RRF and memflow's recall, and a query is a
hit at k when any memory holding one of its answers is among the first k.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from contexts.models import Workspace
from memories import lexical, selectors, services
from memories.bench.corpus import Corpus, LabelledQuery
from memories.bench.run import (
    METHODS,
    bench_workspace,
    data_dir,
    load_docs,
    machine,
    progress_printer,
    rrf,
    say,
    vector_cache,
)
from memories.models import Memory

PATHS = ("bulk", "single")


def _marker(workspace: Workspace) -> Path:
    return data_dir() / "bench" / "loaded" / workspace.slug


def load_single(
    workspace: Workspace, corpus: Corpus, vectors: np.ndarray, model_id: str
) -> tuple[dict[str, int], dict[str, str]]:
    """Remember each doc on its own, as `POST memories/` does; outcome counts, doc key → id."""
    counts: dict[str, int] = defaultdict(int)
    ids: dict[str, str] = {}
    show = progress_printer("remember one by one")
    started = time.monotonic()
    for n, (doc, vector) in enumerate(zip(corpus.docs, vectors, strict=True)):
        result = services.memory_remember_bulk(
            workspace=workspace,
            items=[services.RememberInput(text=doc.text, metadata={"bench_key": doc.key})],
            vectors=vector[np.newaxis, :],
            vectors_model=model_id,
        )[0]
        counts[result.outcome] += 1
        ids[doc.key] = str(result.memory.pk)
        show(n + 1, len(corpus.docs), time.monotonic() - started)
    return dict(counts), ids


def loaded_workspace(
    corpus: Corpus, name: str, path: str, *, backend: str | None, fresh: bool
) -> tuple[Workspace, dict[str, Any], dict[int, set[str]]]:
    """The corpus in a workspace of its own for `path`; load figures, memory id → doc keys.

    Reused when a previous run finished loading it (unless `fresh`); a
    folded doc answers through the entry it was folded into.
    """
    slug = f"{name}-{path}-{corpus.digest()}" + (f"-{backend}" if backend else "")
    workspace, new = bench_workspace(slug)
    marker = _marker(workspace)
    if not new and (fresh or not marker.exists()):
        say(f"dropping workspace {slug} to load it again…")
        workspace.delete()
        workspace, new = bench_workspace(slug)
    if backend is not None and selectors.serving_backend(workspace=workspace) != backend:
        job = services.workspace_embedder_set(workspace=workspace, backend=backend)
        while job.target_backend:  # an empty workspace: done at the first step
            services.reembed_step(
                workspace_id=workspace.pk, generation=job.generation, max_batches=20, enqueue=False
            )
            job.refresh_from_db()
    embedder = selectors.embedder_for(workspace)
    if new:
        say(f"embedding {len(corpus.docs):,} texts with {embedder.model_id} (cached on disk)…")
        vectors = vector_cache(embedder).get(
            [d.text for d in corpus.docs], progress=progress_printer("embed")
        )
        say(f"loading {len(corpus.docs):,} memories into {slug} through the {path} path…")
        started = time.monotonic()
        if path == "bulk":
            counts, ids = load_docs(
                workspace, corpus.docs, vectors, vectors_model=embedder.model_id
            )
        else:
            counts, ids = load_single(workspace, corpus, vectors, embedder.model_id)
        figures = {"outcomes": counts, "seconds": round(time.monotonic() - started, 1)}
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({"figures": figures, "ids": ids}))
    else:
        saved = json.loads(marker.read_text())
        figures, ids = saved["figures"], saved["ids"]
    id_to_keys: dict[int, set[str]] = defaultdict(set)
    for key, pk in ids.items():
        id_to_keys[int(pk)].add(key)
    # A merge keeps the entry's id, so every fold is found through it.
    return workspace, figures, dict(id_to_keys)


def rank_all(
    workspace: Workspace, query: LabelledQuery, vector: np.ndarray, model_id: str
) -> dict[str, list[int]]:
    """The first ten of each arm alone, of plain RRF over them and of memflow's recall."""
    filters = selectors.MemoryFilters()
    dense = [
        i
        for i, _ in selectors.dense_arm(
            workspace=workspace, vector=vector, filters=filters, model_id=model_id
        )
    ]
    lexical_hits = selectors.lexical_arm(
        workspace=workspace, query=lexical.parse_query(query.query), filters=filters
    )
    lexical_ids = [h.id for h in lexical_hits.hits]
    fused = selectors.memory_recall(
        workspace=workspace, query=query.query, k=10, vector=vector, vector_model=model_id
    ).hits
    return {
        "dense": dense[:10],
        "lexical": lexical_ids[:10],
        "rrf": rrf(dense, lexical_ids)[:10],
        "memflow": [int(h.memory.pk) for h in fused],
    }


def score(
    rankings: list[tuple[LabelledQuery, dict[str, list[int]]]],
    id_to_keys: dict[int, set[str]],
) -> dict[str, dict[str, dict[str, float]]]:
    """r@1/5/10 and MRR@10 per kind (in the order first seen) and overall, per method."""
    kinds = list(dict.fromkeys(q.kind for q, _ in rankings))
    table: dict[str, dict[str, dict[str, float]]] = {}
    for kind in (*kinds, "overall"):
        chosen = [(q, r) for q, r in rankings if kind == "overall" or q.kind == kind]
        table[kind] = {}
        for method in METHODS:
            hits = {1: 0, 5: 0, 10: 0}
            mrr = 0.0
            for query, ranked in chosen:
                first = next(
                    (
                        n
                        for n, i in enumerate(ranked[method])
                        if id_to_keys.get(i, set()) & query.answers
                    ),
                    None,
                )
                for cut in hits:
                    hits[cut] += first is not None and first < cut
                mrr += 1 / (first + 1) if first is not None else 0.0
            n = len(chosen)
            table[kind][method] = {
                "r@1": round(hits[1] / n, 3),
                "r@5": round(hits[5] / n, 3),
                "r@10": round(hits[10] / n, 3),
                "mrr@10": round(mrr / n, 3),
                "n": n,
            }
    return table


def folded_distinct(corpus: Corpus, id_to_keys: dict[int, set[str]]) -> int:
    """Docs of distinct text that share an entry with another doc (each beyond the first)."""
    norms = {d.key: lexical.normalize(d.text) for d in corpus.docs}
    folded = 0
    for keys in id_to_keys.values():
        folded += len({norms[k] for k in keys}) - 1
    return folded


def quality_on(
    corpus: Corpus,
    *,
    name: str,
    paths: Sequence[str] = PATHS,
    backend: str | None = None,
    fresh: bool = False,
    splits: Sequence[str] = ("dev", "heldout"),
) -> dict[str, Any]:
    """The quality table of `corpus` through each of `paths`, over the queries of
    `splits` (docs/BENCH-SETS.md), and one table for each split."""
    result: dict[str, Any] = {
        "bench": "quality",
        "corpus": name,
        "size": len(corpus.docs),
        "queries": dict(Counter(q.kind for q in corpus.queries)),
        "paths": {},
    }
    for path in paths:
        workspace, figures, id_to_keys = loaded_workspace(
            corpus, name, path, backend=backend, fresh=fresh
        )
        embedder = selectors.embedder_for(workspace)
        result["embedder"] = embedder.model_id
        asked = [q for q in corpus.queries if q.split in splits]
        vectors = vector_cache(embedder, "query").get(
            [q.query for q in asked], progress=progress_printer("embed queries")
        )
        rankings = []
        show = progress_printer(f"queries ({path})")
        started = time.monotonic()
        for n, (query, vector) in enumerate(zip(asked, vectors, strict=True)):
            rankings.append((query, rank_all(workspace, query, vector, embedder.model_id)))
            show(n + 1, len(asked), time.monotonic() - started)
        current = Memory.objects.filter(workspace=workspace, valid_to__isnull=True).count()
        result["paths"][path] = {
            "load": figures,
            "entries": current,
            "folded_distinct": folded_distinct(corpus, id_to_keys),
            "table": score(rankings, id_to_keys),
            "splits": {
                split: score([(q, r) for q, r in rankings if q.split == split], id_to_keys)
                for split in splits
                if any(q.split == split for q, _ in rankings)
            },
        }
    result["machine"] = machine()
    return result


def format_quality_paths(result: dict[str, Any]) -> str:
    lines = []
    for path, figures in result["paths"].items():
        lines.append(
            f"{result['corpus']} ({result['size']:,} memories, {result.get('embedder')}), "
            f"{path} path: {figures['entries']:,} entries, "
            f"{figures['folded_distinct']} distinct texts folded"
        )
        lines.append(
            f"{'kind':<16}{'method':<9}{'r@1':>7}{'r@5':>7}{'r@10':>7}{'mrr@10':>8}{'n':>6}"
        )
        for kind, methods in figures["table"].items():
            for method, row in methods.items():
                lines.append(
                    f"{kind:<16}{method:<9}{row['r@1']:>7.3f}{row['r@5']:>7.3f}"
                    f"{row['r@10']:>7.3f}{row['mrr@10']:>8.3f}{row['n']:>6}"
                )
    return "\n".join(lines)
