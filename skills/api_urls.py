"""Routes under /api/v1/workspaces/{slug}/ (included by memflow_site.urls).

Fixed routes come before `skills/<name>/`; their names are reserved
(`services.RESERVED_NAMES`), so no skill can be shadowed by one.
"""

from __future__ import annotations

from django.urls import path

from skills import api

urlpatterns = [
    path("skills/", api.SkillListCreateApi.as_view(), name="api-skill-list"),
    path("skills/export/", api.SkillExportApi.as_view(), name="api-skill-export"),
    path("skills/import/", api.SkillImportApi.as_view(), name="api-skill-import"),
    path("skills/events/", api.SkillEventListApi.as_view(), name="api-skill-events"),
    path("skills/proposals/", api.ProposalListApi.as_view(), name="api-skill-proposal-list"),
    path(
        "skills/proposals/<int:proposal_id>/accept/",
        api.ProposalAcceptApi.as_view(),
        name="api-skill-proposal-accept",
    ),
    path("skills/<slug:name>/", api.SkillDetailApi.as_view(), name="api-skill-detail"),
    path("skills/<slug:name>/archive/", api.SkillArchiveApi.as_view(), name="api-skill-archive"),
    path("skills/<slug:name>/restore/", api.SkillRestoreApi.as_view(), name="api-skill-restore"),
    path("skills/<slug:name>/uses/", api.SkillUsesApi.as_view(), name="api-skill-uses"),
    path("skills/<slug:name>/versions/", api.SkillVersionsApi.as_view(), name="api-skill-versions"),
]
