from __future__ import annotations

from django.urls import path

from memories.dashboard import embedder as embedder_views
from memories.dashboard import memory_actions, views
from memories.dashboard import triage as triage_views

urlpatterns = [
    path("w/<slug:slug>/", views.workspace_overview, name="workspace-overview"),
    path("w/<slug:slug>/sessions/<int:session_id>/", views.session_detail, name="session-detail"),
    path("w/<slug:slug>/memories/", views.memory_list, name="memory-list"),
    path("w/<slug:slug>/memories/<int:memory_id>/", views.memory_detail, name="memory-detail"),
    *[
        path(f"w/<slug:slug>/memories/<int:memory_id>/{name}/", view, name=f"memory-{name}")
        for name, view in memory_actions.ACTIONS.items()
    ],
    path("w/<slug:slug>/core/", views.core_detail, name="core-detail"),
    path("w/<slug:slug>/core/<str:target>/<str:action>/", views.core_action, name="core-action"),
    path("w/<slug:slug>/states/", views.state_list, name="state-list"),
    path("w/<slug:slug>/triage/", triage_views.triage_list, name="triage-list"),
    path("w/<slug:slug>/triage/<str:kind>/", triage_views.triage_action, name="triage-action"),
    path("w/<slug:slug>/ledger/", views.ledger_detail, name="ledger-detail"),
    path(
        "w/<slug:slug>/settings/embedder/",
        embedder_views.workspace_embedder,
        name="workspace-embedder",
    ),
]
