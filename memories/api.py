"""REST endpoints of the memory engine, under /api/v1/workspaces/{slug}/."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from contexts.api_base import PAGE_PARAMETERS, WorkspaceApiView, page_response, page_schema
from contexts.audit import Actor, Origin
from contexts.auth import request_user
from contexts.knobs import knob
from contexts.models import AgentSession
from contexts.selectors import Access
from contexts.services import agent_session_get_or_create
from memories import rendering, selectors, services
from memories.decay import retention
from memories.models import DedupeEvent, InjectionEvent, Memory

MAX_BULK = 1000
MAX_TEXT = 200_000  # a hard cap before any work; the workspace's own limit is lower


class MemoryOutput(serializers.Serializer):
    id = serializers.IntegerField()
    text = serializers.CharField()
    compartment = serializers.CharField()
    state_key = serializers.CharField()
    state_value = serializers.CharField()
    source = serializers.CharField()  # type: ignore[assignment]
    app = serializers.CharField()
    session = serializers.CharField(allow_null=True)
    strength = serializers.FloatField()
    access_count = serializers.IntegerField()
    last_accessed = serializers.DateTimeField()
    created_at = serializers.DateTimeField()
    valid_from = serializers.DateTimeField()
    valid_to = serializers.DateTimeField(allow_null=True)
    superseded_by = serializers.IntegerField(allow_null=True)
    pinned = serializers.BooleanField()
    expires_at = serializers.DateTimeField(allow_null=True)
    age = serializers.CharField()
    retention = serializers.FloatField()
    evidence_ids = serializers.ListField(child=serializers.IntegerField())
    metadata = serializers.DictField()
    forgotten = serializers.DictField(
        allow_null=True, help_text="The tombstone (at, by, reason, purge_after), or null."
    )


def memory_json(
    memory: Memory, *, now: Any = None, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    now = now or timezone.now()
    data = {
        "id": memory.pk,
        "text": memory.text,
        "compartment": memory.compartment,
        "state_key": memory.state_key,
        "state_value": memory.state_value,
        "source": memory.source,
        "app": memory.app,
        "session": memory.session.external_id if memory.session_id and memory.session else None,
        "strength": memory.strength,
        "access_count": memory.access_count,
        "last_accessed": memory.last_accessed,
        "created_at": memory.created_at,
        "valid_from": memory.valid_from,
        "valid_to": memory.valid_to,
        "superseded_by": memory.superseded_by_id,
        "pinned": memory.pinned,
        "expires_at": memory.expires_at,
        "age": rendering.age_label(memory.created_at, now),
        "retention": round(
            retention(
                last_accessed=memory.last_accessed,
                access_count=memory.access_count,
                source=memory.source,
                now=now,
                base_tau_days=float(knob(memory.workspace, "decay_tau_days")),
            ),
            4,
        ),
        "evidence_ids": sorted(memory.metadata.get("evidence_ids", [])) if memory.metadata else [],
        "metadata": memory.metadata or {},
        "forgotten": _tombstone_json(memory),
    }
    output = dict(MemoryOutput(data).data)
    if extra:
        output.update(extra)
    return output


def _tombstone_json(memory: Memory) -> dict[str, Any] | None:
    if memory.forgotten_at is None:
        return None
    by = memory.forgotten_by
    return {
        "at": memory.forgotten_at.isoformat(),
        "by": by.get_username() if by is not None else None,
        "reason": memory.forgotten_reason,
        "purge_after": (
            due.isoformat() if (due := selectors.memory_purge_due(memory=memory)) else None
        ),
    }


def rest_actor(request: Request) -> Actor:
    return Actor.for_request(request, origin=Origin.REST)


class SessionField(serializers.CharField):
    """A harness's own session id; the session is created on first sight."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_blank", True)
        kwargs.setdefault("max_length", 200)
        kwargs.setdefault("help_text", "The harness's session id (created on first sight).")
        super().__init__(**kwargs)


class MemoryApiView(WorkspaceApiView):
    def session_for(
        self, request: Request, external_id: str | None, app: str = ""
    ) -> AgentSession | None:
        if not external_id:
            return None
        return agent_session_get_or_create(
            workspace=self.workspace, external_id=external_id, user=request_user(request), app=app
        )


class RememberInputSerializer(serializers.Serializer):
    text = serializers.CharField(max_length=MAX_TEXT, trim_whitespace=False)
    compartment = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    state_key = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    state_value = serializers.CharField(
        max_length=MAX_TEXT, required=False, allow_blank=True, default=""
    )
    source = serializers.ChoiceField(choices=Memory.Source.choices, default=Memory.Source.MODEL)  # type: ignore[assignment]
    app = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    metadata = serializers.DictField(required=False, default=dict)

    def to_input(self) -> services.RememberInput:
        data: dict[str, Any] = self.validated_data
        return services.RememberInput(
            text=data["text"],
            compartment=data["compartment"],
            state_key=data["state_key"],
            state_value=data["state_value"],
            source=data["source"],
            app=data["app"],
            metadata=data["metadata"],
        )


class RememberOutput(serializers.Serializer):
    outcome = serializers.ChoiceField(choices=["created", "strengthened", "merged"])
    id = serializers.IntegerField()
    superseded = serializers.ListField(child=serializers.IntegerField())
    similarity = serializers.FloatField(allow_null=True)
    memory = MemoryOutput()


def remember_json(result: services.RememberResult) -> dict[str, Any]:
    return {
        "outcome": result.outcome,
        "id": result.memory.pk,
        "superseded": result.superseded,
        "similarity": result.similarity,
        "memory": memory_json(result.memory),
    }


class MemoryPageOutput(serializers.Serializer):
    count = serializers.IntegerField()
    offset = serializers.IntegerField()
    limit = serializers.IntegerField()
    results = MemoryOutput(many=True)


class MemoryFilterSerializer(serializers.Serializer):
    compartment = serializers.CharField(required=False)
    source = serializers.ChoiceField(choices=Memory.Source.choices, required=False)  # type: ignore[assignment]
    app = serializers.CharField(required=False)
    state_key = serializers.CharField(required=False)
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)
    include_superseded = serializers.BooleanField(required=False, default=False)

    def filters(self, **extra: Any) -> selectors.MemoryFilters:
        data: dict[str, Any] = self.validated_data
        return selectors.MemoryFilters(
            compartment=data.get("compartment"),
            source=data.get("source"),
            app=data.get("app"),
            state_key=data.get("state_key"),
            since=data.get("since"),
            until=data.get("until"),
            include_superseded=data.get("include_superseded", False),
            **extra,
        )


class MemoryListCreateApi(MemoryApiView):
    class InputSerializer(RememberInputSerializer):
        session = SessionField()

    class ListParams(MemoryFilterSerializer):
        status = serializers.ChoiceField(
            choices=["current", "superseded", "all", "forgotten"],
            default="current",
            help_text="`forgotten`: the tombstones (restorable until `forgotten.purge_after`).",
        )
        contains = serializers.CharField(required=False, max_length=200)

    @extend_schema(
        operation_id="memory_list",
        parameters=[ListParams, *PAGE_PARAMETERS],
        responses=MemoryPageOutput,
    )
    def get(self, request: Request, slug: str) -> Response:
        params = self.ListParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        f: dict[str, Any] = params.validated_data
        filters = params.filters(contains=f.get("contains") or None)
        if f["status"] != "current":
            filters = dataclasses.replace(filters, include_superseded=True)
        qs = selectors.memory_list(workspace=self.workspace, filters=filters)
        if f["status"] == "superseded":
            qs = qs.filter(valid_to__isnull=False)
        elif f["status"] == "forgotten":
            qs = selectors.memory_forgotten_list(workspace=self.workspace)
        now = timezone.now()
        return page_response(
            request,
            qs.select_related("session", "workspace"),
            render=lambda rows: [memory_json(m, now=now) for m in rows],
        )

    @extend_schema(
        operation_id="memory_remember",
        request=InputSerializer,
        responses={201: RememberOutput, 200: RememberOutput},
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        item = data.to_input()
        session = self.session_for(request, data.validated_data.get("session"), item.app)
        result = services.memory_remember(
            workspace=self.workspace, item=item, user=request_user(request), session=session
        )
        code = status.HTTP_201_CREATED if result.outcome == "created" else status.HTTP_200_OK
        return Response(remember_json(result), status=code)


class MemoryBulkApi(MemoryApiView):
    class InputSerializer(serializers.Serializer):
        items = RememberInputSerializer(many=True, allow_empty=False, max_length=MAX_BULK)  # type: ignore[call-arg]
        session = SessionField()

    class OutputSerializer(serializers.Serializer):
        results = RememberOutput(many=True)
        created = serializers.IntegerField()
        strengthened = serializers.IntegerField()
        merged = serializers.IntegerField()

    @extend_schema(
        operation_id="memory_remember_bulk", request=InputSerializer, responses=OutputSerializer
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        raw_items: list[dict[str, Any]] = data.validated_data["items"]
        items = [services.RememberInput(**item) for item in raw_items]
        session = self.session_for(request, data.validated_data.get("session"))
        try:
            results = services.memory_remember_bulk(
                workspace=self.workspace, items=items, user=request_user(request), session=session
            )
        except services.MemflowError as exc:
            # Name the item, so a client can fix it and resend the batch.
            index = next(
                (i for i, item in enumerate(items) if _refuses(self.workspace, item)), None
            )
            exc.extra["index"] = index
            raise
        counts = {
            k: sum(r.outcome == k for r in results) for k in ("created", "strengthened", "merged")
        }
        return Response({"results": [remember_json(r) for r in results], **counts})


def _refuses(workspace: Any, item: services.RememberInput) -> bool:
    try:
        services.memory_validate(workspace=workspace, item=item)
    except services.MemflowError:
        return True
    return False


class ForgetParams(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class MemoryDetailApi(MemoryApiView):
    class GetParams(serializers.Serializer):
        session = SessionField()

    class PatchSerializer(serializers.Serializer):
        text = serializers.CharField(max_length=MAX_TEXT, required=False)
        compartment = serializers.CharField(max_length=64, required=False, allow_blank=True)
        pinned = serializers.BooleanField(required=False)

    @extend_schema(operation_id="memory_get", parameters=[GetParams], responses=MemoryOutput)
    def get(self, request: Request, slug: str, memory_id: int) -> Response:
        memory = selectors.memory_get(workspace=self.workspace, memory_id=memory_id)
        params = self.GetParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        session = self.session_for(request, params.validated_data.get("session"))
        services.ledger_record(
            workspace=self.workspace,
            session=session,
            memory_ids=[memory.pk],
            kind=InjectionEvent.Kind.EXPANDED,
        )
        return Response(memory_json(memory))

    @extend_schema(operation_id="memory_update", request=PatchSerializer, responses=MemoryOutput)
    def patch(self, request: Request, slug: str, memory_id: int) -> Response:
        memory = selectors.memory_get(workspace=self.workspace, memory_id=memory_id)
        data = self.PatchSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        if "text" in values or "compartment" in values:
            memory = services.memory_update(
                workspace=self.workspace,
                memory=memory,
                text=values.get("text"),
                compartment=values.get("compartment"),
                actor=rest_actor(request),
            )
        if "pinned" in values:
            memory = services.memory_pin(memory=memory, pinned=values["pinned"])
        return Response(memory_json(memory))

    @extend_schema(
        operation_id="memory_forget",
        parameters=[ForgetParams],
        responses={204: None},
        description="Forget: the entry leaves recall and lists at once, and can be restored "
        "(`restore/`) until the workspace's `forget_retention_days` pass; then it is purged.",
    )
    def delete(self, request: Request, slug: str, memory_id: int) -> Response:
        memory = selectors.memory_get(workspace=self.workspace, memory_id=memory_id)
        params = ForgetParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        services.memory_forget(
            workspace=self.workspace,
            memory=memory,
            actor=rest_actor(request),
            reason=params.validated_data["reason"],
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemorySupersedeApi(MemoryApiView):
    class InputSerializer(serializers.Serializer):
        by = serializers.IntegerField(
            required=False, help_text="id of the entry that replaces this one"
        )
        text = serializers.CharField(max_length=MAX_TEXT, required=False, help_text="or a new text")
        session = SessionField()

    class OutputSerializer(serializers.Serializer):
        superseded = MemoryOutput()
        by = MemoryOutput()

    @extend_schema(
        operation_id="memory_supersede", request=InputSerializer, responses=OutputSerializer
    )
    def post(self, request: Request, slug: str, memory_id: int) -> Response:
        memory = selectors.memory_get(workspace=self.workspace, memory_id=memory_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        by = None
        if values.get("by") is not None:
            by = selectors.memory_get(workspace=self.workspace, memory_id=values["by"])
        session = self.session_for(request, values.get("session"))
        successor = services.memory_supersede(
            workspace=self.workspace,
            memory=memory,
            by=by,
            text=values.get("text"),
            user=request_user(request),
            session=session,
            actor=rest_actor(request),
        )
        services.ledger_record(
            workspace=self.workspace,
            session=session,
            memory_ids=[memory.pk],
            kind=InjectionEvent.Kind.SUPERSEDED,
        )
        memory.refresh_from_db()
        successor.refresh_from_db()
        return Response({"superseded": memory_json(memory), "by": memory_json(successor)})


# --- recall --------------------------------------------------------------------------


class RecallInputSerializer(MemoryFilterSerializer):
    query = serializers.CharField(max_length=10_000)
    k = serializers.IntegerField(min_value=1, max_value=100, default=10)
    mode = serializers.ChoiceField(choices=["full", "index", "block"], default="full")
    budget_chars = serializers.IntegerField(min_value=100, max_value=100_000, required=False)
    session = SessionField()
    inject = serializers.BooleanField(
        default=False,
        help_text="The caller puts these results into a model's context: record them as injected.",
    )


class RecallOutput(serializers.Serializer):
    mode = serializers.CharField()
    results = serializers.ListField(child=serializers.DictField(), required=False)
    block = serializers.CharField(required=False)
    ids = serializers.ListField(child=serializers.IntegerField())
    fusion = serializers.DictField()


def run_recall(
    view: MemoryApiView, request: Request, values: dict[str, Any], filters: selectors.MemoryFilters
) -> dict[str, Any]:
    """Recall as the API answers it (services.memory_recall_answer), for this request's session."""
    answer, _, _ = services.memory_recall_answer(
        workspace=view.workspace,
        session=view.session_for(request, values.get("session")),
        values=values,
        filters=filters,
    )
    return answer


class RecallApi(MemoryApiView):
    # A recall is a read, even though it is a POST (the query is a body).
    method_access = {"POST": Access.READ}

    @extend_schema(
        operation_id="memory_recall", request=RecallInputSerializer, responses=RecallOutput
    )
    def post(self, request: Request, slug: str) -> Response:
        data = RecallInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(run_recall(self, request, data.validated_data, data.filters()))


class AutoApi(MemoryApiView):
    """Recall, then capture the text — what a prompt hook does in one call."""

    class InputSerializer(RecallInputSerializer):
        capture = serializers.BooleanField(default=True)
        capture_compartment = serializers.CharField(
            max_length=64, required=False, allow_blank=True, default=""
        )
        source = serializers.ChoiceField(choices=Memory.Source.choices, default=Memory.Source.HOOK)  # type: ignore[assignment]
        app = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")

    class OutputSerializer(serializers.Serializer):
        recall = RecallOutput()
        captured = RememberOutput(allow_null=True)

    @extend_schema(operation_id="memory_auto", request=InputSerializer, responses=OutputSerializer)
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        # Here `source` and `app` describe the capture, not a recall filter.
        filters = dataclasses.replace(data.filters(), source=None, app=None)
        recall = run_recall(self, request, values, filters)
        captured = None
        if values["capture"]:
            session = self.session_for(request, values.get("session"), values["app"])
            result = services.memory_remember(
                workspace=self.workspace,
                item=services.RememberInput(
                    text=values["query"],
                    compartment=values["capture_compartment"],
                    source=values["source"],
                    app=values["app"],
                ),
                user=request_user(request),
                session=session,
            )
            captured = remember_json(result)
        return Response({"recall": recall, "captured": captured})


# --- lineage, states, upkeep ------------------------------------------------------------


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


class ConflictsApi(MemoryApiView):
    class Params(serializers.Serializer):
        threshold = serializers.FloatField(
            min_value=0.5, max_value=1.0, allow_null=True, default=None
        )

    class OutputSerializer(serializers.Serializer):
        a = MemoryOutput()
        b = MemoryOutput()
        cosine = serializers.FloatField()

    @extend_schema(
        operation_id="memory_conflicts",
        parameters=[Params, *PAGE_PARAMETERS],
        responses=page_schema("ConflictPage", OutputSerializer),
    )
    def get(self, request: Request, slug: str) -> Response:
        params = self.Params(data=request.query_params)
        params.is_valid(raise_exception=True)
        values: dict[str, Any] = params.validated_data
        # The scan is bounded (the newest entries), so all its conflicts are found and paged.
        conflicts = selectors.memory_conflicts(
            workspace=self.workspace, threshold=values["threshold"], limit=1000
        )
        now = timezone.now()
        return page_response(
            request,
            conflicts,
            render=lambda rows: [
                {
                    "a": memory_json(c.a, now=now),
                    "b": memory_json(c.b, now=now),
                    "cosine": round(c.cosine, 4),
                }
                for c in rows
            ],
        )


class InsightsApi(MemoryApiView):
    @extend_schema(operation_id="memory_insights", responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, slug: str) -> Response:
        now = timezone.now()
        conflicts = selectors.memory_conflicts(workspace=self.workspace, limit=20)
        fading = selectors.memory_fading(workspace=self.workspace, now=now, limit=20)
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
            workspace=self.workspace, dry_run=data.validated_data["dry_run"]
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
        pack = selectors.session_pack(workspace=self.workspace, minutes=values["minutes"], now=now)

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
        return Response(selectors.memory_stats(workspace=self.workspace))


class LedgerApi(MemoryApiView):
    class Params(serializers.Serializer):
        session = SessionField()
        top = serializers.IntegerField(min_value=1, max_value=100, default=10)

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
                session_id=values.get("session") or None,
                top=values["top"],
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
        events = DedupeEvent.objects.filter(workspace=self.workspace).order_by("-created_at", "-id")
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
        event = DedupeEvent.objects.filter(workspace=self.workspace, pk=event_id).first()
        if event is None:
            raise services.NotFound(f"No dedupe event {event_id}.", code="event_not_found")
        restored = services.dedupe_undo(
            workspace=self.workspace, event=event, user=request_user(request)
        )
        return Response(memory_json(restored), status=status.HTTP_201_CREATED)
