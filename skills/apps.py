from __future__ import annotations

from django.apps import AppConfig


class SkillsConfig(AppConfig):
    name = "skills"
    verbose_name = "Skills"

    def ready(self) -> None:
        from contexts.knobs import register_knobs
        from skills import conf, hooks

        hooks.register()
        register_knobs("Skills", conf.DEFAULTS, order=30)
