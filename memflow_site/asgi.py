"""The ASGI application `memflow serve` runs under uvicorn."""

from __future__ import annotations

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memflow_site.settings")
application = get_asgi_application()

# Answer at once; the embedding model loads beside the first requests.
from memories import embeddings  # noqa: E402

embeddings.warm_up_in_background()
