"""The triage queue through REST: conflict clusters and fading entries, and settling them.

The dashboard's queue (triage_views.py) and these endpoints call the same
selector and service, so a cluster settled here leaves the dashboard's
queue, MCP's `flymemory_find_conflicts` and this list alike.
"""

from __future__ import annotations

import re
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from contexts.errors import NotFound
from contexts.rest.base import PAGE_PARAMETERS, page_response, page_schema
from contexts.tenancy.auth import request_user
from memories import selectors, services
from memories.api.memories import MemoryApiView, MemoryOutput, memory_json, rest_actor
from memories.services.triage import CONFLICT_DECISIONS, FADING_DECISIONS

# The scan behind the list is bounded (see memory_conflicts), so every cluster it finds is
# counted and paged; this many clusters at most.
MAX_CLUSTERS = 100
MAX_CLUSTER_IDS = 50
MAX_ID = 2**63 - 1  # a bigint: past it no memory can be named
_CLUSTER_ID = re.compile(r"[1-9][0-9]{0,18}(?:-[1-9][0-9]{0,18})+")


def cluster_id(ids: list[int]) -> str:
    """A cluster's id: its members' ids, sorted, joined by `-` (stable, needs no storage)."""
    return "-".join(str(i) for i in sorted(ids))


def cluster_ids(value: str) -> list[int]:
    """The member ids a cluster id names; 404 `cluster_not_found` when it names none."""
    if not _CLUSTER_ID.fullmatch(value):
        raise NotFound("No such conflict cluster.", code="cluster_not_found")
    ids = sorted({int(part) for part in value.split("-")})
    if not 2 <= len(ids) <= MAX_CLUSTER_IDS or ids[-1] > MAX_ID:
        raise NotFound("No such conflict cluster.", code="cluster_not_found")
    return ids


def cluster_json(cluster: selectors.ConflictCluster, *, now: Any) -> dict[str, Any]:
    return {
        "id": cluster_id(cluster.ids),
        "ids": cluster.ids,
        "cosine": round(cluster.top_cosine, 4),
        "members": [memory_json(m, now=now) for m in cluster.members],
        "pairs": [{"a": p.a.pk, "b": p.b.pk, "cosine": round(p.cosine, 4)} for p in cluster.pairs],
    }


class _PairOutput(serializers.Serializer):
    a = serializers.IntegerField()
    b = serializers.IntegerField()
    cosine = serializers.FloatField()


class ClusterOutput(serializers.Serializer):
    id = serializers.CharField(help_text="The cluster's id, for `conflicts/{cluster}/settle/`.")
    ids = serializers.ListField(child=serializers.IntegerField())
    cosine = serializers.FloatField(help_text="The closest pair's cosine.")
    members = MemoryOutput(many=True)
    pairs = _PairOutput(many=True)


class ConflictsApi(MemoryApiView):
    class Params(serializers.Serializer):
        threshold = serializers.FloatField(
            min_value=0.5, max_value=1.0, allow_null=True, default=None
        )

    @extend_schema(
        operation_id="memory_conflicts",
        parameters=[Params, *PAGE_PARAMETERS],
        responses=page_schema("ConflictClusterPage", ClusterOutput),
    )
    def get(self, request: Request, slug: str) -> Response:
        params = self.Params(data=request.query_params)
        params.is_valid(raise_exception=True)
        values: dict[str, Any] = params.validated_data
        clusters = selectors.memory_conflict_clusters(
            workspace=self.workspace,
            threshold=values["threshold"],
            limit=MAX_CLUSTERS,
            viewer_id=request_user(request).pk,
        )
        now = timezone.now()
        return page_response(
            request, clusters, render=lambda rows: [cluster_json(c, now=now) for c in rows]
        )


class SettleInput(serializers.Serializer):
    decision = serializers.ChoiceField(choices=[str(d) for d in CONFLICT_DECISIONS])
    conclusion = serializers.CharField(
        max_length=20_000,
        required=False,
        default="",
        allow_blank=True,
        help_text="consolidate: the entry that replaces them all",
    )
    keep = serializers.IntegerField(
        required=False, allow_null=True, default=None, help_text="supersede: the id that stays"
    )


class SettleOutput(serializers.Serializer):
    cluster = serializers.CharField()
    ids = serializers.ListField(child=serializers.IntegerField())
    decision = serializers.CharField()
    holds = MemoryOutput(
        allow_null=True, help_text="The entry that now holds (conclusion or kept), or null."
    )


class ConflictSettleApi(MemoryApiView):
    @extend_schema(
        operation_id="memory_conflict_settle", request=SettleInput, responses=SettleOutput
    )
    def post(self, request: Request, slug: str, cluster: str) -> Response:
        ids = cluster_ids(cluster)
        data = SettleInput(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        held = services.memory_conflict_resolve(
            workspace=self.workspace,
            ids=ids,
            decision=values["decision"],
            conclusion=values["conclusion"],
            keep=values["keep"],
            actor=rest_actor(request),
        )
        return Response(
            {
                "cluster": cluster_id(ids),
                "ids": ids,
                "decision": values["decision"],
                "holds": memory_json(held) if held is not None else None,
            }
        )


class FadingApi(MemoryApiView):
    class Params(serializers.Serializer):
        below = serializers.FloatField(min_value=0.0, max_value=1.0, default=0.5)

    @extend_schema(
        operation_id="memory_fading",
        parameters=[Params, *PAGE_PARAMETERS],
        responses=page_schema("FadingPage", MemoryOutput),
    )
    def get(self, request: Request, slug: str) -> Response:
        params = self.Params(data=request.query_params)
        params.is_valid(raise_exception=True)
        now = timezone.now()
        fading = selectors.memory_fading(
            workspace=self.workspace,
            below=params.validated_data["below"],
            limit=500,
            now=now,
            viewer_id=request_user(request).pk,
        )
        return page_response(
            request,
            fading,
            render=lambda rows: [
                memory_json(m, now=now, extra={"retention": round(r, 4)}) for m, r in rows
            ],
        )


class FadingSettleInput(serializers.Serializer):
    decision = serializers.ChoiceField(choices=[str(d) for d in FADING_DECISIONS])


class FadingSettleApi(MemoryApiView):
    @extend_schema(
        operation_id="memory_fading_settle", request=FadingSettleInput, responses=MemoryOutput
    )
    def post(self, request: Request, slug: str, memory_id: int) -> Response:
        memory = selectors.memory_get(
            workspace=self.workspace, memory_id=memory_id, viewer_id=request_user(request).pk
        )
        data = FadingSettleInput(data=request.data)
        data.is_valid(raise_exception=True)
        services.memory_fading_resolve(
            workspace=self.workspace,
            memory=memory,
            decision=data.validated_data["decision"],
            actor=rest_actor(request),
        )
        memory.refresh_from_db()
        return Response(memory_json(memory))
