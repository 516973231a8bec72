"""The ASGI application `memflow serve` runs under uvicorn.

Django serves everything but `/mcp`, which goes to the MCP endpoint
(memflow_site/mcp); the dispatcher in front also runs the ASGI lifespan
the MCP SDK's session manager needs.
"""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memflow_site.settings")
django_application = get_asgi_application()

# Imported once Django is set up: the MCP tools import models.
from memflow_site.mcp import McpEndpoint  # noqa: E402
from memories import embeddings  # noqa: E402

application = McpEndpoint(django_application)

# Answer at once; the embedding model loads beside the first requests.
embeddings.warm_up_in_background()
