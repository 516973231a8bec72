"""The manual-page sets of `memflow bench quality` and the dev/held-out split
(docs/BENCH-SETS.md): what a page gives, and queries that follow the rules."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from memories import lexical
from memories.bench.corpus import load_labelled
from memories.bench.sets import Page, draw_queries, read_page, split_of

PAGE = r""".TH FROB 1 "2026" "frob 1.0"
.SH NAME
frob \- twist the widgets of a running server
.SH SYNOPSIS
.B frob
[\fB\-\-dry\-run\fR]
.SH DESCRIPTION
.B frob
twists each widget the server at \fI/etc/frob.conf\fR names, in the order
they were registered.
.PP
With \fB\-\-dry\-run\fR it only prints what it would do; see
.BR frobd (8).
.SH OPTIONS
.TP
\fB\-v\fR
more output
"""


def test_a_page_gives_its_summary_and_its_description_as_printed(tmp_path):
    path = tmp_path / "frob.1.gz"
    path.write_bytes(gzip.compress(PAGE.encode()))
    page = read_page(path)
    assert page is not None
    assert page.key == "frob.1" and page.summary == "twist the widgets of a running server"
    assert page.description == (
        "frob twists each widget the server at /etc/frob.conf names, in the order they "
        "were registered. With --dry-run it only prints what it would do; see frobd(8)."
    )


def test_a_redirect_page_gives_nothing(tmp_path):
    path = tmp_path / "unfrob.1"
    path.write_text(".so man1/frob.1\n")
    assert read_page(path) is None


def _pages(n: int) -> list[Page]:
    return [
        Page(
            key=f"tool{i}.1",
            name=f"tool{i}",
            summary=f"manage the {i}th kind of queue entry",
            description=f"tool{i} reads --opt-{i} from /etc/tool{i}.conf and then walks "
            f"every queue in turn, stopping at entry number {i} before it writes a report "
            "of what changed to the standard output.",
        )
        for i in range(n)
    ]


def test_queries_follow_the_written_rules():
    pages = _pages(40)
    queries = draw_queries(pages, per_kind=10)
    by_key = {p.key: p for p in pages}
    kinds = {q.kind for q in queries}
    assert kinds == {"summary", "identifier", "fragment"}
    for q in queries:
        source = by_key[min(q.answers)]
        if q.kind == "fragment":
            assert 4 <= len(q.query.split()) <= 8
            assert q.query in source.description  # as written, punctuation and all
            assert len(q.answers) <= 3
        elif q.kind == "identifier":
            assert lexical.looks_like_identifier(q.query) and q.query != source.name
            assert all(q.query.lower() not in p.description.lower() for p in pages if p != source)
        else:
            assert q.query == source.summary


def test_the_split_is_fixed_by_the_answers_and_both_sides_are_used(tmp_path):
    keys = [f"page{i}" for i in range(200)]
    splits = [split_of({k}) for k in keys]
    assert splits == [split_of({k, "zzz"}) for k in keys]  # the smallest answer decides
    assert 60 < splits.count("dev") < 140
    rows = [{"id": k, "text": f"the text of {k} about widgets"} for k in keys]
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    queries = [{"qid": k, "kind": "summary", "query": k, "answers": [k]} for k in keys]
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    corpus = load_labelled(Path(tmp_path), queries_per_kind=20)
    # At most 20 of a kind in each split, each labelled as the rule says.
    assert sorted(q.split for q in corpus.queries) == ["dev"] * 20 + ["heldout"] * 20
    assert all(q.split == split_of(q.answers) for q in corpus.queries)
