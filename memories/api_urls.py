from __future__ import annotations

from django.urls import path

from memories import api

urlpatterns = [
    path("memories/", api.MemoryListCreateApi.as_view(), name="api-memory-list"),
    path("memories/bulk/", api.MemoryBulkApi.as_view(), name="api-memory-bulk"),
    path("memories/<int:memory_id>/", api.MemoryDetailApi.as_view(), name="api-memory-detail"),
    path(
        "memories/<int:memory_id>/supersede/",
        api.MemorySupersedeApi.as_view(),
        name="api-memory-supersede",
    ),
    path("recall/", api.RecallApi.as_view(), name="api-recall"),
    path("auto/", api.AutoApi.as_view(), name="api-auto"),
    path("consolidate/", api.ConsolidateApi.as_view(), name="api-consolidate"),
    path("states/", api.StateListApi.as_view(), name="api-state-list"),
    path("states/<str:key>/", api.StateDetailApi.as_view(), name="api-state-detail"),
    path("states/<str:key>/history/", api.StateHistoryApi.as_view(), name="api-state-history"),
    path("conflicts/", api.ConflictsApi.as_view(), name="api-conflicts"),
    path("insights/", api.InsightsApi.as_view(), name="api-insights"),
    path("cleanup/", api.CleanupApi.as_view(), name="api-cleanup"),
    path("session-pack/", api.SessionPackApi.as_view(), name="api-session-pack"),
    path("stats/", api.StatsApi.as_view(), name="api-stats"),
    path("ledger/", api.LedgerApi.as_view(), name="api-ledger"),
    path("dedupe-events/", api.DedupeEventListApi.as_view(), name="api-dedupe-event-list"),
    path("dedupe-events/<int:event_id>/undo/", api.DedupeUndoApi.as_view(), name="api-dedupe-undo"),
]
