from __future__ import annotations

from django.contrib import admin

from contexts.models import (
    AgentSession,
    ApiKey,
    ContextDocument,
    Declaration,
    Membership,
    SessionEvent,
    Workspace,
)


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["workspace", "user", "role"]
    list_filter = ["role"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["prefix", "name", "user", "workspace", "scope", "last_used_at", "revoked_at"]
    readonly_fields = ["prefix", "key_hash"]


@admin.register(AgentSession)
class AgentSessionAdmin(admin.ModelAdmin):
    list_display = ["external_id", "workspace", "app", "started_at", "ended_at"]


@admin.register(SessionEvent)
class SessionEventAdmin(admin.ModelAdmin):
    list_display = ["session", "kind", "at"]
    list_filter = ["kind"]


@admin.register(Declaration)
class DeclarationAdmin(admin.ModelAdmin):
    list_display = ["directory", "workspace", "inherit", "updated_at"]
    search_fields = ["directory"]


@admin.register(ContextDocument)
class ContextDocumentAdmin(admin.ModelAdmin):
    list_display = ["path", "workspace", "sha256", "updated_at"]
    search_fields = ["path"]
