from __future__ import annotations

import numpy as np

from memories import embeddings, onnx_path


def test_the_default_model_is_the_shipped_minilm():
    embedder = embeddings.get_embedder()
    assert embedder.dimension == 384
    assert embedder.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert "site-packages" in str(embedder.path) or embedder.path.is_dir()
    assert embeddings.status() == ("ready", "")


def test_vectors_are_unit_length_and_meaningful():
    embedder = embeddings.get_embedder()
    vectors = embedder.encode(
        [
            "The database server runs PostgreSQL 18 with pgvector.",
            "Postgres with the pgvector extension is our database.",
            "My cat likes to sleep in the sun.",
        ]
    )
    assert vectors.shape == (3, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    related, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
    assert related > 0.6 > unrelated + 0.3


def test_a_batch_gives_the_same_vectors_as_one_by_one():
    embedder = embeddings.get_embedder()
    texts = ["alpha beta", "gamma delta epsilon", "x"]
    batch = embedder.encode(texts)
    single = np.stack([embedder.encode_one(t) for t in texts])
    assert np.allclose(batch, single, atol=1e-5)


def st_embedder() -> embeddings.SentenceTransformerEmbedder:
    embedder = embeddings.get_embedder()
    assert isinstance(embedder, embeddings.SentenceTransformerEmbedder)
    return embedder


ONNX_TEXTS = [
    "  auxiliary data for PScan-ChIP  ",  # the model's own preprocessing strips it
    "部署前必须先运行数据库迁移脚本。",
    "word " * 600,  # past max_seq_length: truncated the same way
    "",
    "Test2::Plugin::MemUsage prints peak memory after tests",
]


def test_single_texts_through_onnx_runtime_match_torch(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMFLOW_ONNX_CACHE", str(tmp_path))
    model = st_embedder().model
    fast = onnx_path.OnnxPath(model, embeddings.model_path())
    assert fast.encode(ONNX_TEXTS[0]) is None  # not ready yet: the caller uses torch
    assert fast.prepare(wait=True)
    torch_vectors = model.encode(ONNX_TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    for text, expected in zip(ONNX_TEXTS, torch_vectors, strict=True):
        vector = fast.encode(text)
        assert vector is not None and vector.shape == (384,) and vector.dtype == np.float32
        assert float(vector @ expected) >= 0.99999, text
    assert len(list(tmp_path.glob("*.onnx"))) == 1


def test_the_onnx_graph_is_exported_once_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMFLOW_ONNX_CACHE", str(tmp_path))
    model = st_embedder().model
    assert onnx_path.OnnxPath(model, embeddings.model_path()).prepare(wait=True)

    def no_second_export(*args, **kwargs):
        raise AssertionError("exported again")

    monkeypatch.setattr(onnx_path, "_export", no_second_export)
    assert onnx_path.OnnxPath(model, embeddings.model_path()).prepare(wait=True)


def test_a_failed_export_leaves_texts_on_torch(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMFLOW_ONNX_CACHE", str(tmp_path))

    def broken(*args, **kwargs):
        raise RuntimeError("no exporter here")

    monkeypatch.setattr(onnx_path, "_export", broken)
    embedder = st_embedder()
    fast = onnx_path.OnnxPath(embedder.model, embedder.path)
    monkeypatch.setattr(embedder, "fast", fast)
    embedder.warm()
    assert fast.failed and fast.session is None
    vector = embedder.encode_one("still embedded")
    expected = embedder.model.encode(["still embedded"], normalize_embeddings=True)[0]
    assert float(vector @ expected) >= 0.99999
