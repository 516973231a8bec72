from __future__ import annotations

from django.apps import AppConfig


class ContextsConfig(AppConfig):
    name = "contexts"
    verbose_name = "Contexts: workspaces, keys, sessions"

    def ready(self) -> None:
        from contexts import checks, hook_providers, schema  # noqa: F401  (checks, OpenAPI scheme)
        from contexts.flowctx import conf as flowctx_conf
        from contexts.flowctx import hooks as flowctx_hooks
        from contexts.knobs import register_knobs

        hook_providers.register()
        register_knobs("Working context (flowctx)", flowctx_conf.DEFAULTS, order=20)
        flowctx_hooks.register()
