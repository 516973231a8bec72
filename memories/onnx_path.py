"""A single text through ONNX Runtime instead of torch: the query path.

A recall embeds one short query, and so does every `user-prompt` hook. On
this machine's two cores torch took 20-25 ms for that (mostly per-operator
overhead around small matrix products); ONNX Runtime runs the same
computation, exported from the same weights, in ~7 ms. Batches (imports,
re-embeds) stay on torch, which is as fast there.

The graph is exported here, from the model folder on disk (nothing is
downloaded), in the background when a long-lived process asks for it
(`Embedder.warm`: `memflow serve` does at start): until it is ready, and in
one-shot commands, texts go through torch. It is cached per model folder content and library
versions under `MEMFLOW_ONNX_CACHE` (default `~/.cache/memflow/onnx`), so
each process after the first loads it in well under a second. The export
covers the sentence-transformers pipeline this model uses — a BERT-style
Transformer, mean pooling, normalisation — and nothing else: for any other
pipeline the fast path is simply not offered. Tests hold it to the torch
output (cosine ≥ 0.99999).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memflow_site.runtime.env import env_bool, env_str

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def enabled() -> bool:
    if not env_bool("MEMFLOW_EMBED_ONNX", True):
        return False
    import importlib.util

    return importlib.util.find_spec("onnxruntime") is not None


def cache_dir() -> Path:
    configured = env_str("MEMFLOW_ONNX_CACHE")
    if configured:
        return Path(configured)
    base = env_str("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memflow" / "onnx"


def supported(model: SentenceTransformer) -> bool:
    """Transformer → mean pooling → normalise, the pipeline the export reproduces."""
    names = [type(module).__name__ for module in model]
    if names != ["Transformer", "Pooling", "Normalize"]:
        return False
    pooling: Any = model[1]
    config = pooling.get_config_dict()
    return config.get("pooling_mode", "mean") == "mean" or bool(
        config.get("pooling_mode_mean_tokens")
    )


def _fingerprint(path: Path) -> str:
    """The model folder's files (names, sizes, contents of the small ones) and the library versions."""
    import onnxruntime
    import torch
    import transformers

    digest = hashlib.sha256(
        f"{torch.__version__}|{transformers.__version__}|{onnxruntime.__version__}".encode()
    )
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        stat = file.stat()
        digest.update(f"{file.relative_to(path)}|{stat.st_size}".encode())
        if stat.st_size < 1_000_000:
            digest.update(file.read_bytes())
    return digest.hexdigest()[:16]


def _export(model: SentenceTransformer, target: Path) -> None:
    import torch

    first: Any = model[0]
    transformer = first.auto_model.eval()

    class Pipeline(torch.nn.Module):
        """The transformer, then sentence-transformers' mean pooling and normalisation."""

        def __init__(self) -> None:
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            tokens = self.transformer(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1)

    sample = model.tokenizer(["an example to trace"], return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in INPUTS}
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with torch.inference_mode(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's notes on operators it maps
        torch.onnx.export(
            Pipeline().eval(),
            tuple(sample[name] for name in INPUTS),
            str(partial),
            input_names=list(INPUTS),
            output_names=["embedding"],
            dynamic_axes={**axes, "embedding": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
    os.replace(partial, target)  # whole or not at all, for every process that looks


class OnnxPath:
    """The ONNX session for one model, prepared on a thread; `encode` until then returns None."""

    def __init__(self, model: SentenceTransformer, path: Path) -> None:
        self.model = model
        self.path = path
        self.session: Any = None
        self.failed = False
        self._pid = os.getpid()
        self._started = False
        self._lock = threading.Lock()
        self._ready = threading.Event()

    def prepare(self, *, wait: bool = False) -> bool:
        """Start preparing (once); with `wait`, return whether it is ready when done."""
        with self._lock:
            if not self._started:
                self._started = True
                # Not a daemon: a process that ends mid-export waits the
                # second or two for it rather than aborting inside torch.
                threading.Thread(target=self._prepare, name="onnx-export").start()
        if wait:
            self._ready.wait()
        return self.session is not None

    def _prepare(self) -> None:
        try:
            import onnxruntime

            target = cache_dir() / f"{self.path.name}-{_fingerprint(self.path)}.onnx"
            if not target.is_file():
                logger.info("exporting %s to ONNX at %s", self.path.name, target)
                _export(self.model, target)
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = min(os.cpu_count() or 1, 2)
            # Its worker threads would otherwise spin for a while after each
            # run, and on two cores take them from the database statements
            # that follow (recall's arms ran 9 ms in the bench, 17 in a hook).
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            options.log_severity_level = 3
            self.session = onnxruntime.InferenceSession(
                str(target), options, providers=["CPUExecutionProvider"]
            )
            logger.info("single texts embed through ONNX Runtime (%s)", target.name)
        except Exception:
            self.failed = True
            logger.exception("the ONNX path for %s failed; texts embed through torch", self.path)
        finally:
            self._ready.set()

    def encode(self, text: str) -> np.ndarray | None:
        """The normalised embedding of one text, or None while the session is not ready."""
        if self._pid != os.getpid():
            # A forked child: the parent's session and its threads are not its own.
            self.session, self._started, self._pid = None, False, os.getpid()
            self._ready = threading.Event()
        session = self.session
        if session is None:
            # Prepared only when asked (`Embedder.warm`: the server, the
            # benches): a one-shot command is over before an export would be.
            return None
        # The model's own preprocessing (whitespace strip, truncation to its
        # max_seq_length), as sentence-transformers' encode applies it.
        preprocess = getattr(self.model, "preprocess", None) or self.model.tokenize
        features = preprocess([text])
        feed = {
            name: features[name].numpy()
            if name in features
            else np.zeros_like(features["input_ids"].numpy())
            for name in INPUTS
        }
        vectors = session.run(None, feed)[0]
        vector: np.ndarray = vectors[0].astype(np.float32, copy=False)
        return vector
