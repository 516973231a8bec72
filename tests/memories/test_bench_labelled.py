"""A labelled set for `memflow bench quality --corpus`, read from disk."""

from __future__ import annotations

import json
from pathlib import Path

from memories.bench.corpus import load_labelled


def _write(directory: Path, name: str, rows: list[dict[str, object]]) -> None:
    (directory / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_memory_remember_would_refuse_is_left_out_with_the_queries_only_it_answers(tmp_path):
    # Remember refuses a text holding a password in a URL, and with it the
    # whole batch: loading such a set stopped part-way before.
    _write(
        tmp_path,
        "corpus.jsonl",
        [
            {"id": "a", "text": "retry the transfer when the proxy resets the connection"},
            {
                "id": "b",
                "text": "the test server listens on https://admin:Zq8vLp3xRt@example.org/x",
            },
        ],
    )
    _write(
        tmp_path,
        "queries.jsonl",
        [
            {"qid": 1, "kind": "summary", "query": "retry on proxy reset", "answers": ["a"]},
            {"qid": 2, "kind": "summary", "query": "test server address", "answers": ["b"]},
        ],
    )
    corpus = load_labelled(tmp_path)
    assert [d.key for d in corpus.docs] == ["a"]
    assert [q.query for q in corpus.queries] == ["retry on proxy reset"]
