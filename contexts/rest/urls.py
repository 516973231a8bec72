from __future__ import annotations

from django.urls import path

from contexts.declarations import api as context_api
from contexts.flowctx import api as flowctx_api
from contexts.tenancy import api, audit_api

urlpatterns = [
    path("", api.WorkspaceDetailApi.as_view(), name="api-workspace-detail"),
    path("members/", api.MemberListCreateApi.as_view(), name="api-member-list"),
    path("audit/", audit_api.AuditListApi.as_view(), name="api-audit-list"),
    path("mute/", api.MuteApi.as_view(), name="api-mute"),
    path("sessions/", api.SessionListApi.as_view(), name="api-session-list"),
    path("members/<str:username>/", api.MemberDetailApi.as_view(), name="api-member-detail"),
    path(
        "contexts/assemble/", context_api.ContextAssembleApi.as_view(), name="api-context-assemble"
    ),
    path("contexts/record/", context_api.ContextRecordApi.as_view(), name="api-context-record"),
    path("contexts/config/", context_api.ContextConfigApi.as_view(), name="api-context-config"),
    path(
        "declarations/",
        context_api.DeclarationListCreateApi.as_view(),
        name="api-declaration-list",
    ),
    path(
        "declarations/<int:declaration_id>/",
        context_api.DeclarationDetailApi.as_view(),
        name="api-declaration-detail",
    ),
    path("documents/", context_api.DocumentListCreateApi.as_view(), name="api-document-list"),
    path(
        "documents/<int:document_id>/",
        context_api.DocumentDetailApi.as_view(),
        name="api-document-detail",
    ),
    path("compression/", flowctx_api.CompressionCreateApi.as_view(), name="api-compression-list"),
    path(
        "compression/<str:sha256>/",
        flowctx_api.CompressionDetailApi.as_view(),
        name="api-compression-detail",
    ),
    path(
        "sessions/<str:session_id>/summaries/",
        flowctx_api.SummaryListApi.as_view(),
        name="api-summary-list",
    ),
    path(
        "sessions/<str:session_id>/summaries/fold/",
        flowctx_api.SummaryFoldApi.as_view(),
        name="api-summary-fold",
    ),
    path(
        "sessions/<str:session_id>/summaries/<str:node_id>/",
        flowctx_api.SummaryDetailApi.as_view(),
        name="api-summary-detail",
    ),
    path(
        "sessions/<str:session_id>/scratchpad/",
        flowctx_api.ScratchpadApi.as_view(),
        name="api-scratchpad",
    ),
]
