"""Django's Postgres backend, pointed at the embedded server on first connect."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.backends.postgresql import base

from memflow_site import embedded_pg


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self) -> dict[str, Any]:
        server = embedded_pg.ensure_running(Path(settings.MEMFLOW_DATA_DIR))
        self.settings_dict["HOST"] = server.socket_dir
        return super().get_connection_params()
