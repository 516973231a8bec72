from __future__ import annotations

from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from contexts.knobs import register_knobs
        from memories import conf, hooks, selectors

        hooks.register()
        register_knobs("Memory", conf.DEFAULTS, order=10)
        connection_created.connect(selectors.search_settings_apply, dispatch_uid="memories.search")
