from __future__ import annotations

from django.urls import path

from memories.api import core as core_api
from memories.api import forget as forget_api
from memories.api import memories as api
from memories.api import sessions as session_api
from memories.api import tombstones as tombstone_api
from memories.api import triage as triage_api
from memories.api import upkeep as upkeep_api

urlpatterns = [
    path("memories/", api.MemoryListCreateApi.as_view(), name="api-memory-list"),
    path("memories/bulk/", api.MemoryBulkApi.as_view(), name="api-memory-bulk"),
    path(
        "memories/forget/",
        forget_api.MemoryForgetMatchingApi.as_view(),
        name="api-memory-forget-matching",
    ),
    path("memories/<int:memory_id>/", api.MemoryDetailApi.as_view(), name="api-memory-detail"),
    path(
        "memories/<int:memory_id>/supersede/",
        api.MemorySupersedeApi.as_view(),
        name="api-memory-supersede",
    ),
    path(
        "memories/<int:memory_id>/restore/",
        tombstone_api.MemoryRestoreApi.as_view(),
        name="api-memory-restore",
    ),
    path(
        "memories/<int:memory_id>/purge/",
        tombstone_api.MemoryPurgeApi.as_view(),
        name="api-memory-purge",
    ),
    path("recall/", api.RecallApi.as_view(), name="api-recall"),
    path("auto/", api.AutoApi.as_view(), name="api-auto"),
    path("consolidate/", upkeep_api.ConsolidateApi.as_view(), name="api-consolidate"),
    path("states/", upkeep_api.StateListApi.as_view(), name="api-state-list"),
    path("states/<str:key>/", upkeep_api.StateDetailApi.as_view(), name="api-state-detail"),
    path(
        "states/<str:key>/history/", upkeep_api.StateHistoryApi.as_view(), name="api-state-history"
    ),
    path("conflicts/", triage_api.ConflictsApi.as_view(), name="api-conflicts"),
    path(
        "conflicts/<str:cluster>/settle/",
        triage_api.ConflictSettleApi.as_view(),
        name="api-conflict-settle",
    ),
    path("fading/", triage_api.FadingApi.as_view(), name="api-fading"),
    path(
        "fading/<int:memory_id>/settle/",
        triage_api.FadingSettleApi.as_view(),
        name="api-fading-settle",
    ),
    path("insights/", upkeep_api.InsightsApi.as_view(), name="api-insights"),
    path("cleanup/", upkeep_api.CleanupApi.as_view(), name="api-cleanup"),
    path("session-pack/", upkeep_api.SessionPackApi.as_view(), name="api-session-pack"),
    path("stats/", upkeep_api.StatsApi.as_view(), name="api-stats"),
    path("ledger/", upkeep_api.LedgerApi.as_view(), name="api-ledger"),
    path(
        "sessions/<str:session_id>/",
        session_api.SessionDetailApi.as_view(),
        name="api-session-detail",
    ),
    path("dedupe-events/", upkeep_api.DedupeEventListApi.as_view(), name="api-dedupe-event-list"),
    path(
        "dedupe-events/<int:event_id>/undo/",
        upkeep_api.DedupeUndoApi.as_view(),
        name="api-dedupe-undo",
    ),
    path("core/", core_api.CoreApi.as_view(), name="api-core"),
    path("core/freeze/", core_api.CoreFreezeApi.as_view(), name="api-core-freeze"),
    path("core/<str:target>/", core_api.CoreEditApi.as_view(), name="api-core-edit"),
    path(
        "core/<str:target>/revisions/",
        core_api.CoreRevisionsApi.as_view(),
        name="api-core-revisions",
    ),
    path("core/<str:target>/revert/", core_api.CoreRevertApi.as_view(), name="api-core-revert"),
    path("core/<str:target>/move/", core_api.CoreMoveApi.as_view(), name="api-core-move"),
    path("archive/recall/", core_api.ArchiveRecallApi.as_view(), name="api-archive-recall"),
]
