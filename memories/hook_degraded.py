"""What a hook does when the embedding model is not there in time.

After a restart the model takes 20-95 s to load, and on a busy machine one
embedding can take longer than a hook's whole budget. A hook never waits for
either: its recall runs on the lexical arm alone (the words of the prompt),
its capture waits for the model on a thread of its own and is stored then,
and the person is told once per session (a `systemMessage`) why recall is
by words only for now.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from django.db import connection

from contexts.hooks import HookContext
from memflow_site.runtime.env import env_str

logger = logging.getLogger(__name__)

# How long a hook waits for its prompt's embedding (begun early, while the
# session is recorded) before it recalls by words alone. A quiet machine
# embeds a prompt in ~10 ms; this leaves a 1 s hook room for everything else.
DEFAULT_EMBED_WAIT = 0.4

LOADING = (
    "memflow's embedding model is still loading (the server has just started): recall matched "
    "by words only, and this prompt is stored once the model is ready."
)
SLOW = (
    "memflow's embedding took longer than the hook's budget (the machine is busy): recall "
    "matched by words only this time; the prompt is stored all the same."
)

_told: set[tuple[int, str]] = set()
_TOLD_KEPT = 10_000


def embed_wait() -> float:
    try:
        return max(0.0, float(env_str("MEMFLOW_HOOK_EMBED_WAIT") or DEFAULT_EMBED_WAIT))
    except ValueError:
        return DEFAULT_EMBED_WAIT


def vector_in_time(found: Any, wait: float) -> Any:
    """`found` (a vector, or the Future of one) if it is there within `wait` s, else None."""
    if not isinstance(found, Future):
        return found
    try:
        return found.result(timeout=wait)
    except FutureTimeout:
        return None


def tell_once(ctx: HookContext, message: str) -> None:
    """`message` for the person, the first time this session degrades this way."""
    key = (ctx.session.pk, message)
    if key in _told:
        return
    if len(_told) > _TOLD_KEPT:
        _told.clear()
    _told.add(key)
    ctx.messages.append(message)


_waiting: queue.Queue[Callable[[], None]] = queue.Queue()
_worker: threading.Thread | None = None
_worker_lock = threading.Lock()


def capture_when_ready(capture: Callable[[], None]) -> None:
    """Run `capture` on the one thread that waits for the model, in order, never in a hook."""
    global _worker
    _waiting.put(capture)
    with _worker_lock:
        if _worker is None or not _worker.is_alive():
            _worker = threading.Thread(target=_drain, name="capture-after-load", daemon=True)
            _worker.start()


def _drain() -> None:
    while True:
        capture = _waiting.get()
        try:
            capture()
        except Exception:
            logger.exception("a prompt held for the embedding model could not be stored")
        finally:
            connection.close()  # this thread's connection
