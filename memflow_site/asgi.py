"""The ASGI application `memflow serve` runs under uvicorn.

Django serves everything but `/mcp`, which goes to the MCP endpoint
(memflow_site/mcp); the dispatcher in front also runs the ASGI lifespan
the MCP SDK's session manager needs.

Django's views and middleware are all synchronous, so Django runs as its WSGI
application on a fixed pool of threads (a2wsgi): one hand-off per request.
Under Django's ASGI handler every sync middleware hopped between the event
loop and a fresh thread twice, which cost ~25 ms of a `user-prompt` hook on
two cores.
"""

from __future__ import annotations

import os

from a2wsgi import WSGIMiddleware
from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memflow_site.settings")

# django-stubs types WSGIHandler.__call__ as returning HttpResponseBase, which
# is the iterable of bytes a WSGI server wants.
django_application = WSGIMiddleware(get_wsgi_application(), workers=settings.MEMFLOW_WEB_THREADS)  # type: ignore[arg-type]

# Imported once Django is set up: the MCP tools import models.
from memflow_site import heap  # noqa: E402
from memflow_site.mcp import McpEndpoint  # noqa: E402
from memories import embeddings  # noqa: E402

application = McpEndpoint(django_application)

# Answer at once; the embedding model loads beside the first requests. What
# the process holds once it is warm lives as long as the process does.
embeddings.warm_up_in_background(then=heap.settle)
