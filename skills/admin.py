"""The skills tables in Django's admin: for looking, mostly; changes go through the API."""

from __future__ import annotations

from django.contrib import admin

from skills.models import Nudge, Skill, SkillEvent, SkillProposal, SkillUse, SkillVersion


@admin.register(Skill)
class SkillAdmin(admin.ModelAdmin):
    list_display = ["name", "workspace", "owner", "status", "version", "use_count", "active_at"]
    list_filter = ["status", "origin"]
    search_fields = ["name", "description"]
    exclude = ["embedding"]


@admin.register(SkillVersion)
class SkillVersionAdmin(admin.ModelAdmin):
    list_display = ["skill", "version", "source", "created_at"]
    list_filter = ["source"]


@admin.register(SkillUse)
class SkillUseAdmin(admin.ModelAdmin):
    list_display = ["skill", "version", "outcome", "session", "created_at"]
    list_filter = ["outcome"]


@admin.register(SkillProposal)
class SkillProposalAdmin(admin.ModelAdmin):
    list_display = ["id", "workspace", "session", "turn", "status", "builder", "skill"]
    list_filter = ["status", "mode"]


@admin.register(Nudge)
class NudgeAdmin(admin.ModelAdmin):
    list_display = ["id", "workspace", "session", "created_at", "delivered_at"]


@admin.register(SkillEvent)
class SkillEventAdmin(admin.ModelAdmin):
    list_display = ["kind", "skill", "workspace", "reason", "created_at"]
    list_filter = ["kind"]
