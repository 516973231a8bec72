"""REST endpoints over the library as a whole: consolidation, state chains, insights, decay
clean-up, the session pack, stats, the ledger and the dedupe log. Conflict clusters and the
queue's settling are in `memories.api.triage`; per-memory endpoints and recall in `memories.api.memories`."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from contexts.rest.base import PAGE_PARAMETERS, page_response, page_schema
from contexts.tenancy.auth import request_user
from memories import rendering, selectors, services
from memories.api.memories import (
    MAX_TEXT,
    MemoryApiView,
    MemoryOutput,
    SessionField,
    memory_json,
    rest_actor,
)
from memories.models import DedupeEvent, InjectionEvent, Memory


class ConsolidateApi(MemoryApiView):
    class InputSerializer(serializers.Serializer):
        ids = serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=200)
        conclusion = serializers.CharField(max_length=MAX_TEXT)
        compartment = serializers.CharField(
            max_length=64, required=False, allow_blank=True, default=""
        )
        app = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
        session = SessionField()

    @extend_schema(
        operation_id="memory_consolidate", request=InputSerializer, responses={201: MemoryOutput}
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        memory = services.memory_consolidate(
            workspace=self.workspace,
            ids=values["ids"],
            conclusion=values["conclusion"],
            compartment=values["compartment"],
            app=values["app"],
            user=request_user(request),
            session=self.session_for(request, values.get("session"), values["app"]),
            actor=rest_actor(request),
        )
        return Response(memory_json(memory), status=status.HTTP_201_CREATED)


class StateListApi(MemoryApiView):
    @extend_schema(
        operation_id="state_list",
        parameters=PAGE_PARAMETERS,
        responses=page_schema("StatePage", MemoryOutput),
    )
    def get(self, request: Request, slug: str) -> Response:
        now = timezone.now()
        return page_response(
            request,
            selectors.state_keys(workspace=self.workspace),
            render=lambda rows: [memory_json(m, now=now) for m in rows],
        )


class StateDetailApi(MemoryApiView):
    class OutputSerializer(serializers.Serializer):
        key = serializers.CharField()
        value = serializers.CharField()
        since = serializers.DateTimeField()
        memory = MemoryOutput()

    @extend_schema(operation_id="state_lookup", responses=OutputSerializer)
    def get(self, request: Request, slug: str, key: str) -> Response:
        memory = selectors.state_current(workspace=self.workspace, key=key)
        return Response(
            {
                "key": key,
                "value": memory.state_value or memory.text,
                "since": memory.valid_from,
                "memory": memory_json(memory),
            }
        )


class StateHistoryApi(MemoryApiView):
    @extend_schema(
        operation_id="state_history",
        parameters=PAGE_PARAMETERS,
        responses=page_schema("StateHistoryPage", MemoryOutput),
    )
    def get(self, request: Request, slug: str, key: str) -> Response:
        now = timezone.now()
        return page_response(
            request,
            selectors.state_history(workspace=self.workspace, key=key),
            render=lambda rows: [memory_json(m, now=now) for m in rows],
        )


class InsightsApi(MemoryApiView):
    @extend_schema(operation_id="memory_insights", responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, slug: str) -> Response:
        now = timezone.now()
        viewer = request_user(request).pk
        conflicts = selectors.memory_conflicts(workspace=self.workspace, limit=20, viewer_id=viewer)
        fading = selectors.memory_fading(
            workspace=self.workspace, now=now, limit=20, viewer_id=viewer
        )
        return Response(
            {
                "conflicts": [
                    {
                        "a": memory_json(c.a, now=now),
                        "b": memory_json(c.b, now=now),
                        "cosine": round(c.cosine, 4),
                    }
                    for c in conflicts
                ],
                "fading": [
                    memory_json(m, now=now, extra={"retention": round(r, 4)}) for m, r in fading
                ],
            }
        )


class CleanupApi(MemoryApiView):
    class InputSerializer(serializers.Serializer):
        dry_run = serializers.BooleanField(default=True)

    @extend_schema(
        operation_id="memory_cleanup", request=InputSerializer, responses=OpenApiTypes.OBJECT
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        report = services.memory_cleanup(
            workspace=self.workspace,
            dry_run=data.validated_data["dry_run"],
            member_id=request_user(request).pk,
        )
        return Response(
            {
                "dry_run": report.dry_run,
                "removed": report.removed,
                "purged": report.purged,
                "candidates": [
                    {"id": i, "retention": round(r, 4), "source": s}
                    for i, r, s in report.candidates
                ],
            }
        )


class SessionPackApi(MemoryApiView):
    class Params(serializers.Serializer):
        minutes = serializers.IntegerField(min_value=1, max_value=60 * 24 * 365, default=180)
        chars = serializers.IntegerField(min_value=80, max_value=4000, default=400)

    @extend_schema(
        operation_id="memory_session_pack", parameters=[Params], responses=OpenApiTypes.OBJECT
    )
    def get(self, request: Request, slug: str) -> Response:
        params = self.Params(data=request.query_params)
        params.is_valid(raise_exception=True)
        values: dict[str, Any] = params.validated_data
        now = timezone.now()
        pack = selectors.session_pack(
            workspace=self.workspace,
            minutes=values["minutes"],
            now=now,
            viewer_id=request_user(request).pk,
        )

        def entry(m: Memory) -> dict[str, Any]:
            return {
                "id": m.pk,
                "text": selectors.cut_at_sentence(m.text, values["chars"]),
                "age": rendering.age_label(m.created_at, now),
                "source": m.source,
                "app": m.app,
            }

        return Response(
            {
                "trail": [entry(m) for m in pack.trail],
                "conclusions": [entry(m) for m in pack.conclusions],
            }
        )


class StatsApi(MemoryApiView):
    @extend_schema(operation_id="memory_stats", responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, slug: str) -> Response:
        return Response(
            selectors.memory_stats(workspace=self.workspace, viewer_id=request_user(request).pk)
        )


class LedgerApi(MemoryApiView):
    class Params(serializers.Serializer):
        session = SessionField()
        top = serializers.IntegerField(min_value=1, max_value=100, default=10)
        # The dashboard's ranking by default; `events` counts injections too.
        rank = serializers.ChoiceField(choices=["uses", "events"], default="uses")

    class InputSerializer(serializers.Serializer):
        session = serializers.CharField(max_length=200)
        ids = serializers.ListField(child=serializers.IntegerField(), max_length=1000)
        kind = serializers.ChoiceField(
            choices=InjectionEvent.Kind.choices, default=InjectionEvent.Kind.INJECTED
        )

    @extend_schema(
        operation_id="ledger_summary", parameters=[Params], responses=OpenApiTypes.OBJECT
    )
    def get(self, request: Request, slug: str) -> Response:
        params = self.Params(data=request.query_params)
        params.is_valid(raise_exception=True)
        values: dict[str, Any] = params.validated_data
        return Response(
            selectors.ledger_summary(
                workspace=self.workspace,
                viewer_id=request_user(request).pk,
                session_id=values.get("session") or None,
                top=values["top"],
                rank=values["rank"],
            )
        )

    @extend_schema(operation_id="ledger_record", request=InputSerializer, responses={204: None})
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        session = self.session_for(request, values["session"])
        known = list(
            Memory.objects.filter(workspace=self.workspace, pk__in=values["ids"]).values_list(
                "pk", flat=True
            )
        )
        services.ledger_record(
            workspace=self.workspace, session=session, memory_ids=known, kind=values["kind"]
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


def _visible_dedupe_events(workspace: Any, request: Request) -> Any:
    """Folds into someone else's private entry keep its texts: they are not listed."""
    hidden = Memory.objects.filter(workspace=workspace, private=True).exclude(
        selectors.visible_to(request_user(request).pk)
    )
    return DedupeEvent.objects.filter(workspace=workspace).exclude(memory__in=hidden)


class DedupeEventListApi(MemoryApiView):
    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        memory = serializers.IntegerField()
        kind = serializers.CharField()
        incoming_text = serializers.CharField()
        previous_text = serializers.CharField()
        tombstone = serializers.IntegerField(allow_null=True)
        similarity = serializers.FloatField(allow_null=True)
        created_at = serializers.DateTimeField()
        undone_at = serializers.DateTimeField(allow_null=True)

    @extend_schema(
        operation_id="dedupe_event_list",
        parameters=PAGE_PARAMETERS,
        responses=page_schema("DedupeEventPage", OutputSerializer),
    )
    def get(self, request: Request, slug: str) -> Response:
        events = _visible_dedupe_events(self.workspace, request).order_by("-created_at", "-id")
        return page_response(
            request,
            events,
            render=lambda rows: [
                {
                    "id": e.pk,
                    "memory": e.memory_id,
                    "kind": e.kind,
                    "incoming_text": e.incoming_text,
                    "previous_text": e.previous_text,
                    "tombstone": e.tombstone_id,
                    "similarity": e.similarity,
                    "created_at": e.created_at,
                    "undone_at": e.undone_at,
                }
                for e in rows
            ],
        )


class DedupeUndoApi(MemoryApiView):
    @extend_schema(operation_id="dedupe_undo", request=None, responses={201: MemoryOutput})
    def post(self, request: Request, slug: str, event_id: int) -> Response:
        event = _visible_dedupe_events(self.workspace, request).filter(pk=event_id).first()
        if event is None:
            raise services.NotFound(f"No dedupe event {event_id}.", code="event_not_found")
        restored = services.dedupe_undo(
            workspace=self.workspace, event=event, user=request_user(request)
        )
        return Response(memory_json(restored), status=status.HTTP_201_CREATED)
