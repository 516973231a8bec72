from __future__ import annotations

from django.apps import AppConfig


class ContextsConfig(AppConfig):
    name = "contexts"
    verbose_name = "Contexts: workspaces, keys, sessions"

    def ready(self) -> None:
        from contexts import checks, hook_providers, schema  # noqa: F401  (checks, OpenAPI scheme)
        from contexts.flowctx import conf as flowctx_conf  # noqa: F401  (registers the knobs)
        from contexts.flowctx import hooks as flowctx_hooks

        hook_providers.register()
        flowctx_hooks.register()
