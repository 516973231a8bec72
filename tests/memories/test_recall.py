"""Recall: isolation, filters, the fusion rule."""

from __future__ import annotations

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
