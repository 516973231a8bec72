"""The ASGI application `memflow serve` runs under uvicorn.

Django serves everything but `/mcp`, which goes to the MCP endpoint
(memflow_site/mcp); the dispatcher in front also runs the ASGI lifespan
the MCP SDK's session manager needs.

Django's views and middleware are all synchronous, so Django runs as its WSGI
application on a fixed pool of threads (a2wsgi): one hand-off per request.
Under Django's ASGI handler every sync middleware hopped between the event
loop and a fresh thread twice, which cost ~25 ms of a `user-prompt` hook on
two cores.

Hooks run on a pool of threads of their own, and each credential's API
requests in flight are counted before a thread is taken (fairness.py), so
no amount of API or dashboard traffic leaves a hook waiting for a thread.
"""

from __future__ import annotations

import os

from a2wsgi import WSGIMiddleware
from a2wsgi.asgi_typing import Receive, Scope, Send
from django.conf import settings
from django.core.wsgi import get_wsgi_application

from memflow_site.bodies import ChunkedBodies
from memflow_site.fairness import HOOK_PREFIX, CredentialLimit

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memflow_site.settings")

_wsgi = get_wsgi_application()
# django-stubs types WSGIHandler.__call__ as returning HttpResponseBase, which
# is the iterable of bytes a WSGI server wants.
_web = WSGIMiddleware(_wsgi, workers=settings.MEMFLOW_WEB_THREADS)  # type: ignore[arg-type]
# The hooks' own threads: a harness waits on every hook, so however many slow
# API or dashboard requests hold the web threads, a hook never queues behind them.
_hooks = WSGIMiddleware(_wsgi, workers=settings.MEMFLOW_HOOK_THREADS)  # type: ignore[arg-type]


async def _django(scope: Scope, receive: Receive, send: Send) -> None:
    is_hook = scope["type"] == "http" and scope["path"].startswith(HOOK_PREFIX)
    await (_hooks if is_hook else _web)(scope, receive, send)


django_application = CredentialLimit(ChunkedBodies(_django))


# Imported once Django is set up: the MCP tools import models.
from memflow_site.mcp import McpEndpoint  # noqa: E402
from memflow_site.metrics import MetricsLayer  # noqa: E402
from memflow_site.runtime import heap  # noqa: E402
from memories import embeddings  # noqa: E402

# Outermost, so /metrics counts what every layer answered, MCP and refusals included.
application = MetricsLayer(McpEndpoint(django_application))

# Answer at once; the embedding model loads beside the first requests. What
# the process holds once it is warm lives as long as the process does.
embeddings.warm_up_in_background(then=heap.settle)
