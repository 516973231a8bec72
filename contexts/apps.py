from __future__ import annotations

from django.apps import AppConfig


class ContextsConfig(AppConfig):
    name = "contexts"
    verbose_name = "Contexts: workspaces, keys, sessions"

    def ready(self) -> None:
        from contexts import checks  # noqa: F401  (checks, OpenAPI scheme, quota knobs)
        from contexts.declarations import providers as hook_providers
        from contexts.flowctx import conf as flowctx_conf  # noqa: F401  (registers the knobs)
        from contexts.flowctx import hooks as flowctx_hooks
        from contexts.flowctx import selectors as flowctx_selectors
        from contexts.rest import schema  # noqa: F401  (checks, OpenAPI scheme, quota knobs)
        from contexts.tenancy import quotas

        hook_providers.register()
        quotas.register_meter("compression", flowctx_selectors.compression_usage)
        flowctx_hooks.register()
