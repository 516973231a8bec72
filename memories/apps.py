from __future__ import annotations

from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from memories import conf, hooks, selectors  # noqa: F401  (conf registers the knobs)

        hooks.register()
        connection_created.connect(selectors.search_settings_apply, dispatch_uid="memories.search")
