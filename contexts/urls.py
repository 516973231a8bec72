from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from contexts.dashboard import views
from contexts.flowctx import views as flowctx_views

urlpatterns = [
    path("", views.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("keys/", views.apikey_list, name="apikey-list"),
    path("keys/<int:key_id>/revoke/", views.apikey_revoke, name="apikey-revoke"),
    path("workspaces/new/", views.workspace_create, name="workspace-create"),
    path("w/<slug:slug>/sessions/", views.session_list, name="session-list"),
    path("w/<slug:slug>/compression/", flowctx_views.compression_list, name="compression-list"),
    path(
        "w/<slug:slug>/compression/<str:sha256>/",
        views.compression_detail,
        name="compression-detail",
    ),
    path("w/<slug:slug>/declarations/", views.declaration_list, name="declaration-list"),
    path(
        "w/<slug:slug>/declarations/<int:declaration_id>/",
        views.declaration_detail,
        name="declaration-detail",
    ),
    path(
        "w/<slug:slug>/documents/<int:document_id>/", views.document_detail, name="document-detail"
    ),
    path("w/<slug:slug>/settings/", views.workspace_settings, name="workspace-settings"),
    path("w/<slug:slug>/activity/", views.activity_list, name="activity-list"),
]
