from __future__ import annotations

import numpy as np

from memories import embeddings


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
