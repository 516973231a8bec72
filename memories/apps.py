from __future__ import annotations

from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from contexts.flowctx.work import register_work_observer
        from contexts.tenancy.audit import audit_register_text_guard
        from contexts.tenancy.quotas import register_meter
        from memories import conf, hooks, selectors  # noqa: F401  (conf registers the knobs)
        from memories.services import quota, work_capture

        hooks.register()
        register_work_observer(
            "memories:session-work",
            work_capture.session_work_remember,
            enabled=work_capture.session_work_enabled,
        )
        audit_register_text_guard(selectors.private_audit_targets)
        register_meter("memories", quota.memory_usage)
        connection_created.connect(selectors.search_settings_apply, dispatch_uid="memories.search")
