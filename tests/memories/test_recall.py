"""Recall: isolation, filters, the fusion rule."""

from __future__ import annotations

import pytest
from django.db import connection

from memories import lexical, selectors, services
from memories.selectors import LexicalHit, LexicalResult
from memories.services import RememberInput


def remember(workspace, text, **kw):
    return services.memory_remember(workspace=workspace, item=RememberInput(text=text, **kw)).memory


def test_recall_never_returns_another_workspaces_memories(acme, evil):
    remember(evil, "The launch codes are kept in vault/launch-codes.txt")
    mine = remember(acme, "Our rocket manuals are in docs/manuals/")
    for query in ("launch codes vault", "vault/launch-codes.txt", "rocket manuals"):
        hits = selectors.memory_recall(workspace=acme, query=query, k=10).hits
        assert {h.memory.pk for h in hits} <= {mine.pk}


def test_filters_narrow_recall(acme):
    a = remember(acme, "Use uv to manage Python environments", app="dsh", compartment="tooling")
    remember(acme, "Use uv to manage Python environments in CI too", app="claude-code")
    hits = selectors.memory_recall(
        workspace=acme, query="uv python environments", filters=selectors.MemoryFilters(app="dsh")
    ).hits
    assert [h.memory.pk for h in hits] == [a.pk]
    by_compartment = selectors.memory_recall(
        workspace=acme, query="uv", filters=selectors.MemoryFilters(compartment="tooling")
    ).hits
    assert [h.memory.pk for h in by_compartment] == [a.pk]


def test_cjk_substrings_and_paths_match_lexically(acme):
    chinese = remember(acme, "数据库连接失败时先检查 pg_hba.conf 配置")
    path = remember(acme, "Logs rotate via /etc/logrotate.d/memflow every night")
    assert (
        selectors.memory_recall(workspace=acme, query="连接失败", k=1).hits[0].memory.pk
        == chinese.pk
    )
    assert (
        selectors.memory_recall(workspace=acme, query="pg_hba.conf", k=1).hits[0].memory.pk
        == chinese.pk
    )
    assert (
        selectors.memory_recall(workspace=acme, query="/etc/logrotate.d/memflow", k=1)
        .hits[0]
        .memory.pk
        == path.pk
    )


def test_exact_case_identifiers_rank_above_case_folded_ones(acme):
    folded = remember(acme, "the memusage plugin prints totals")
    exact = remember(acme, "Test2::Plugin::MemUsage prints peak memory after tests")
    hits = selectors.memory_recall(workspace=acme, query="MemUsage", k=2).hits
    assert [h.memory.pk for h in hits] == [exact.pk, folded.pk]


def test_fusion_trusts_the_lexical_arm_when_a_match_holds_the_whole_query():
    query = lexical.parse_query("flush the write-ahead log before snapshotting")
    lexical_result = LexicalResult(
        hits=[
            LexicalHit(id=1, bm25=20.0, matched_idf=9.5, exact_case=False),
            LexicalHit(id=2, bm25=5.0, matched_idf=3.0, exact_case=False),
        ],
        total_idf=10.0,
    )
    fusion = selectors.fuse(
        query=query,
        dense=[(2, 0.80), (1, 0.60)],
        lexical_result=lexical_result,
        cosines={1: 0.60, 2: 0.80},
    )
    assert fusion.lexical_weight > 0.7
    assert [c.id for c in fusion.candidates] == [1, 2]


def test_fusion_trusts_the_dense_arm_when_the_words_differ():
    query = lexical.parse_query("how do we ship a new version")
    lexical_result = LexicalResult(
        hits=[LexicalHit(id=1, bm25=4.0, matched_idf=2.0, exact_case=False)], total_idf=10.0
    )
    fusion = selectors.fuse(
        query=query,
        dense=[(2, 0.71), (1, 0.40)],
        lexical_result=lexical_result,
        cosines={1: 0.40, 2: 0.71},
    )
    assert fusion.lexical_weight < 0.2
    assert fusion.candidates[0].id == 2


def test_an_entry_first_in_both_arms_is_first(acme):
    query = lexical.parse_query("anything")
    lexical_result = LexicalResult(
        hits=[
            LexicalHit(id=7, bm25=9.0, matched_idf=5.0, exact_case=False),
            LexicalHit(id=8, bm25=8.0, matched_idf=5.0, exact_case=False),
        ],
        total_idf=10.0,
    )
    fusion = selectors.fuse(
        query=query,
        dense=[(7, 0.9), (8, 0.8)],
        lexical_result=lexical_result,
        cosines={7: 0.9, 8: 0.8},
    )
    assert fusion.candidates[0].id == 7


def test_the_lexical_arm_scores_okapi_bm25(acme):
    texts = [
        "deploy the billing service with make deploy-billing after the migration",
        "the billing migration needs the billing_v2 schema and a maintenance window",
        "rollback: make rollback-billing restores the previous billing release",
        "nothing about money here, only the deploy calendar",
    ]
    ids = [remember(acme, t).pk for t in texts]
    query = lexical.parse_query("billing migration deploy window")
    stats = selectors.lexical_stats(workspace=acme, terms=query.terms)
    result = selectors.lexical_arm(
        workspace=acme, query=query, filters=selectors.MemoryFilters(), stats=stats
    )
    scores = {h.id: h.bm25 for h in result.hits}
    # By hand for the second text, which holds three of the four words; a
    # word's written form ("=billing" beside "bill") counts at its weight.
    tf, length = lexical.term_frequencies(texts[1])
    norm = lexical.K1 * (1 - lexical.B + lexical.B * length / stats.avg_length)
    expected = sum(
        lexical.idf(stats.df[t], stats.docs)
        * (lexical.EXACT_FORM_WEIGHT if lexical.is_exact_form(t) else 1)
        * tf[t]
        * (lexical.K1 + 1)
        / (tf[t] + norm)
        for t in query.terms
        if t in tf
    )
    assert scores[ids[1]] == pytest.approx(expected, rel=1e-9)
    # The two texts holding three of the four words rank above the others.
    assert set(sorted(scores, key=lambda i: -scores[i])[:2]) == {ids[0], ids[1]}
    assert ids[3] in scores  # "deploy" alone still counts


def test_a_long_texts_term_map_stays_in_its_row(acme):
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('server_version_num')::int")
        if cursor.fetchone()[0] < 170000:
            pytest.skip("pg_column_toast_chunk_id needs Postgres 17")
    words = " ".join(f"component{n} handles stage{n} of the pipeline" for n in range(120))
    memory = remember(acme, f"Pipeline map: {words}")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_column_toast_chunk_id(lex) IS NULL, pg_column_toast_chunk_id(embedding)"
            " IS NOT NULL FROM memories_memory WHERE id = %s",
            [memory.pk],
        )
        lex_inline, embedding_out = cursor.fetchone()
    # The embedding and the text move out of the row; the term map the
    # lexical arm reads for every candidate does not.
    assert lex_inline and embedding_out
