from __future__ import annotations

from django.apps import AppConfig


class SkillsConfig(AppConfig):
    name = "skills"
    verbose_name = "Skills"

    def ready(self) -> None:
        from skills import conf, hooks  # noqa: F401  (conf registers the knobs)

        hooks.register()
