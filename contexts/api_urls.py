from __future__ import annotations

from django.urls import path

from contexts import api

urlpatterns = [
    path("", api.WorkspaceDetailApi.as_view(), name="api-workspace-detail"),
    path("members/", api.MemberListCreateApi.as_view(), name="api-member-list"),
    path("members/<str:username>/", api.MemberDetailApi.as_view(), name="api-member-detail"),
]
