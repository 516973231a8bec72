"""The threads a request hands work to and waits for within its own answer.

Recall runs its lexical arm beside the dense one; a hook embeds the prompt
while it records the session. One pool per process, never one inherited by
a fork (its threads would not exist in the child).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings

_pool: tuple[int, ThreadPoolExecutor] | None = None


def side_executor() -> ThreadPoolExecutor:
    """The process's side threads: one per web thread, so no request waits for another's.

    Nothing run here waits for anything else run here, so a busy pool only
    queues, never deadlocks.
    """
    global _pool
    if _pool is None or _pool[0] != os.getpid():
        _pool = (
            os.getpid(),
            ThreadPoolExecutor(settings.MEMFLOW_WEB_THREADS, thread_name_prefix="side"),
        )
    return _pool[1]
