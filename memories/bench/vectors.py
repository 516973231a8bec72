"""Embeddings computed once and kept on disk, so benches can rerun at scale.

Embedding 100,000 descriptions takes a quarter of an hour on two cores;
every later run reads the same vectors back in seconds. Keyed by the model
id and the SHA-1 of each text, so a changed corpus or model recomputes only
what changed. A model that embeds queries unlike passages (e5) keeps its
query vectors in a file of their own.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from memories.embeddings import Embedder, Kind

Progress = Callable[[int, int, float], None]


def _key(text: str) -> bytes:
    return hashlib.sha1(text.encode()).digest()


class VectorCache:
    def __init__(self, directory: Path, embedder: Embedder, kind: Kind = "passage"):
        self.embedder = embedder
        self.kind: Kind = kind
        safe = embedder.model_id.replace("/", "__")
        suffix = "-query" if kind == "query" and not embedder.symmetric else ""
        self.path = directory / f"vectors-{safe}{suffix}.npz"
        self.index: dict[bytes, int] = {}
        self.vectors = np.zeros((0, embedder.dimension), dtype=np.float32)
        if self.path.exists():
            data = np.load(self.path)
            self.vectors = data["vectors"]
            self.index = {bytes(k): i for i, k in enumerate(data["keys"])}

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.zeros((len(self.index), 20), dtype=np.uint8)
        for key, i in self.index.items():
            keys[i] = np.frombuffer(key, dtype=np.uint8)
        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, vectors=self.vectors, keys=keys)
        tmp.replace(self.path)

    def get(
        self, texts: Sequence[str], *, batch: int = 256, progress: Progress | None = None
    ) -> np.ndarray:
        keys = [_key(t) for t in texts]
        missing = list(
            dict.fromkeys(t for t, k in zip(texts, keys, strict=True) if k not in self.index)
        )
        started = time.monotonic()
        for start in range(0, len(missing), batch):
            chunk = missing[start : start + batch]
            vectors = self.embedder.encode(chunk, kind=self.kind).astype(np.float32)
            base = len(self.vectors)
            self.vectors = np.vstack([self.vectors, vectors])
            for offset, text in enumerate(chunk):
                self.index[_key(text)] = base + offset
            if progress:
                progress(start + len(chunk), len(missing), time.monotonic() - started)
            if (start // batch) % 40 == 39:
                self.save()  # survive an interrupted first run
        if missing:
            self.save()
        return self.vectors[[self.index[k] for k in keys]]
