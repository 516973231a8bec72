"""Stand-in vectors for latency benches at scale stay shaped like real embeddings."""

from __future__ import annotations

import numpy as np

from memories.bench.run import standin_vectors


def test_standins_are_unit_vectors_clustered_around_real_ones():
    rng = np.random.default_rng(0)
    real = rng.normal(size=(50, 384)).astype(np.float32)
    real /= np.linalg.norm(real, axis=1, keepdims=True)

    standins = standin_vectors(real, 400)

    assert standins.shape == (400, 384) and standins.dtype == np.float32
    assert np.allclose(np.linalg.norm(standins, axis=1), 1.0, atol=1e-5)
    nearest_real = (standins @ real.T).max(axis=1)
    # Each sits near one real vector (a real embedding's neighbour distance),
    # far nearer than unrelated 384-d vectors (cosine ~0).
    assert 0.55 < float(np.median(nearest_real)) < 0.75
    assert np.array_equal(standins, standin_vectors(real, 400)), "the same seed, the same draw"
