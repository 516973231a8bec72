from __future__ import annotations

from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from contexts.hooks.api import HookApi
from contexts.hooks.claude_api import ClaudeHookApi
from contexts.tenancy import api as contexts_api
from memflow_site.health import HealthApi
from memflow_site.metrics import metrics_view

api_v1: list[URLPattern | URLResolver] = [
    path("health", HealthApi.as_view(), name="api-health"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    path("workspaces/", contexts_api.WorkspaceListCreateApi.as_view(), name="api-workspace-list"),
    path("keys/", contexts_api.KeyListCreateApi.as_view(), name="api-key-list"),
    path("keys/<int:key_id>/", contexts_api.KeyRevokeApi.as_view(), name="api-key-detail"),
    # Before hooks/<event>, which would take "claude-code" for an event's name.
    path("hooks/claude-code", ClaudeHookApi.as_view(), name="api-hook-claude-code"),
    path("hooks/<str:event>", HookApi.as_view(), name="api-hook"),
    # Everything under a workspace; the tenancy test walks this prefix.
    path("workspaces/<slug:slug>/", include("contexts.rest.urls")),
    path("workspaces/<slug:slug>/", include("memories.api.urls")),
    path("workspaces/<slug:slug>/", include("skills.api_urls")),
]

urlpatterns = [
    path("api/v1/", include(api_v1)),
    path("metrics", metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("", include("contexts.urls")),
    path("", include("memories.urls")),
    path("", include("skills.urls")),
]

handler404 = "memflow_site.views.not_found"
handler500 = "memflow_site.views.server_error"
