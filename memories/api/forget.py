"""Bulk forget: `POST memories/forget/` with the list's filters (and `dry_run`)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from contexts.tenancy.selectors import agent_session_get
from memories import services
from memories.api.memories import (
    MemoryApiView,
    MemoryFilterSerializer,
    MemoryOutput,
    memory_json,
    rest_actor,
)

# What the caller named, echoed into each audit row (dates as ISO text).
_DESCRIBED = ("compartment", "source", "app", "state_key", "contains", "tags", "session")


class ForgetInput(MemoryFilterSerializer):
    contains = serializers.CharField(required=False, max_length=200)
    tags = serializers.ListField(
        child=serializers.CharField(max_length=100),
        required=False,
        max_length=20,
        help_text="Entries carrying every one of these tags.",
    )
    session = serializers.CharField(
        required=False, max_length=200, help_text="The harness session id they were written in."
    )
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)
    dry_run = serializers.BooleanField(
        default=False, help_text="Count and sample what would be forgotten; change nothing."
    )


class ForgetOutput(serializers.Serializer):
    dry_run = serializers.BooleanField()
    matched = serializers.IntegerField(help_text="Entries the filter matches now.")
    forgotten = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="Ids forgotten by this call (empty on a dry run).",
    )
    remaining = serializers.IntegerField(
        help_text=f"Matched but left for another call (at most {services.BULK_FORGET_MAX} a call)."
    )
    bulk = serializers.CharField(help_text="The run's id, in each entry's audit row.")
    sample = MemoryOutput(many=True, help_text="On a dry run: the newest matches.")


class MemoryForgetMatchingApi(MemoryApiView):
    @extend_schema(
        operation_id="memory_forget_matching",
        request=ForgetInput,
        responses=ForgetOutput,
        description="Forget every entry the filters match (tombstones, restorable one by one "
        "like a single forget). An empty filter is refused (`empty_filter`). Someone else's "
        "private entries never match.",
    )
    def post(self, request: Request, slug: str) -> Response:
        data = ForgetInput(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        session_pk = None
        if values.get("session"):
            session_pk = agent_session_get(
                workspace=self.workspace, external_id=values["session"]
            ).pk
        described = {k: values[k] for k in _DESCRIBED if values.get(k)}
        described |= {k: values[k].isoformat() for k in ("since", "until") if values.get(k)}
        match = services.ForgetFilter(
            filters=data.filters(),
            contains=values.get("contains") or None,
            tags=tuple(values.get("tags") or ()),
            session_id=session_pk,
            described=described,
        )
        result = services.memory_forget_matching(
            workspace=self.workspace,
            match=match,
            actor=rest_actor(request),
            reason=values["reason"],
            dry_run=values["dry_run"],
        )
        return Response(
            {
                "dry_run": result.dry_run,
                "matched": result.matched,
                "forgotten": result.forgotten,
                "remaining": result.remaining if not result.dry_run else result.matched,
                "bulk": result.bulk_id,
                "sample": [memory_json(m) for m in result.sample],
            }
        )
