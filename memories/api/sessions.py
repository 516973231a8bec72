"""REST `sessions/{session_id}/`: what one session saw and why, as the
dashboard's session page shows it (memories/session_log.py).

Here rather than in `contexts/tenancy/api.py` beside the session list because the
ledger marks and the USER document are the `memories` app's.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from contexts.rest.base import WorkspaceApiView
from contexts.tenancy.api import SessionOutput
from contexts.tenancy.selectors import agent_session_get
from memories.session_log import LEDGER_ROWS, EventFilters, session_events, session_log


class MarkOutput(serializers.Serializer):
    kind = serializers.CharField(help_text="injected, expanded, recalled, superseded or cited")
    at = serializers.DateTimeField()


class WhyOutput(serializers.Serializer):
    rank = serializers.IntegerField(help_text="its place in the block's ranking, from 1")
    score = serializers.FloatField(
        allow_null=True, help_text="what ordered them: the fused score times the retention weight"
    )
    fused = serializers.FloatField(allow_null=True, help_text="the two arms' fused score")
    cosine = serializers.FloatField(allow_null=True, help_text="the dense arm's cosine")
    dense_rank = serializers.IntegerField(
        allow_null=True, help_text="its rank in the dense arm (null: not in its top)"
    )
    bm25 = serializers.FloatField(allow_null=True, help_text="the lexical arm's BM25")
    lexical_rank = serializers.IntegerField(
        allow_null=True, help_text="its rank in the lexical arm (null: not in its top)"
    )
    terms = serializers.ListField(
        child=serializers.CharField(), help_text="the query's terms the entry holds"
    )
    retention = serializers.FloatField(allow_null=True, help_text="its retention weight, 0-1")
    basis = serializers.CharField(
        help_text="for a block not ranked by a query (restore): the list that chose it"
    )


class BlockMemoryOutput(serializers.Serializer):
    id = serializers.IntegerField()
    exists = serializers.BooleanField(help_text="false: forgotten since")
    marks = serializers.ListField(
        child=serializers.CharField(), help_text="the ledger kinds this id has in the session"
    )
    why = WhyOutput(
        allow_null=True,
        help_text="why it ranked, as recorded when it was injected (null: not recorded)",
    )


class RankingOutput(serializers.Serializer):
    lexical_weight = serializers.FloatField(
        allow_null=True, help_text="how far the lexical arm was trusted for this query"
    )
    dense_weight = serializers.FloatField(allow_null=True)
    reason = serializers.CharField(help_text="why that weight, or how the block chose")


class ProjectionOutput(serializers.Serializer):
    sha256 = serializers.CharField(help_text="the stored original's hash")
    kind = serializers.CharField()
    text = serializers.CharField(help_text="what was offered in place of the tool output")
    original_chars = serializers.IntegerField(allow_null=True)
    projected_chars = serializers.IntegerField(allow_null=True)


class BlockOutput(serializers.Serializer):
    name = serializers.CharField()
    order = serializers.IntegerField(allow_null=True)
    why = serializers.CharField(help_text="what this family of blocks is for")
    text = serializers.CharField(help_text="empty when withheld")
    withheld = serializers.BooleanField(
        help_text="the session user's USER document: only that user reads it"
    )
    sha256 = serializers.CharField()
    ranking = RankingOutput(allow_null=True, help_text="null: not recorded, or not a ranking")
    memories = BlockMemoryOutput(many=True)


class AgentOutput(serializers.Serializer):
    id = serializers.CharField()
    type = serializers.CharField(allow_blank=True)


class EventOutput(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    at = serializers.DateTimeField()
    turn = serializers.IntegerField()
    tokens = serializers.IntegerField()
    trigger = serializers.CharField(required=False, help_text="injections: the hook event")
    source = serializers.CharField(  # type: ignore[assignment]
        required=False, help_text="injections at a session start: startup, resume, clear…"
    )
    projection = ProjectionOutput(
        required=False, help_text="injections after a projected tool result: what was offered"
    )
    blocks = BlockOutput(many=True, required=False, help_text="injections: what was given")
    text = serializers.CharField(required=False, help_text="a prompt's or a reply's text")
    tool = serializers.CharField(required=False, help_text="a tool event's tool name")
    agent = AgentOutput(
        required=False,
        help_text="the sub-agent the event came from (Claude Code's agent_id, agent_type); "
        "absent for the main thread",
    )
    payload = serializers.JSONField(
        allow_null=True, help_text="the hook's payload as stored (null for injections)"
    )


class LedgerRowOutput(serializers.Serializer):
    memory_id = serializers.IntegerField()
    exists = serializers.BooleanField()
    marks = MarkOutput(many=True)


class SessionDetailApi(WorkspaceApiView):
    class Params(serializers.Serializer):
        limit = serializers.IntegerField(min_value=1, max_value=500, default=100)
        offset = serializers.IntegerField(min_value=0, max_value=1_000_000_000, default=0)
        kind = serializers.CharField(
            required=False, max_length=64, help_text="only events of this kind"
        )
        turn = serializers.IntegerField(
            required=False, min_value=1, max_value=10_000_000, help_text="only this turn's"
        )
        memory = serializers.IntegerField(
            required=False,
            min_value=1,
            help_text="only the injections that gave this memory id and tool calls naming it",
        )

    class OutputSerializer(SessionOutput):
        events_count = serializers.IntegerField(help_text="events matching the filters")
        offset = serializers.IntegerField()
        limit = serializers.IntegerField()
        events = EventOutput(many=True, help_text="this page of the log, in order")
        ledger_count = serializers.IntegerField(help_text="memory ids with ledger marks")
        ledger = LedgerRowOutput(many=True, help_text=f"the first {LEDGER_ROWS} ids, by id")

    @extend_schema(
        operation_id="session_get",
        parameters=[Params],
        responses=OutputSerializer,
        description="One session by the harness's session id: its events in order (`limit`/"
        "`offset` page them; `kind`, `turn` and `memory` filter them), each injection with its "
        "blocks, why each was given, the memory ids in it with why each ranked (rank, scores, "
        "matched terms, retention, as recorded when injected), and the session's ledger marks.",
    )
    def get(self, request: Request, slug: str, session_id: str) -> Response:
        params = self.Params(data=request.query_params)
        params.is_valid(raise_exception=True)
        offset, limit = params.validated_data["offset"], params.validated_data["limit"]
        session = agent_session_get(workspace=self.workspace, external_id=session_id)
        values = params.validated_data
        filters = EventFilters(
            kind=values.get("kind", ""), turn=values.get("turn"), memory=values.get("memory")
        )
        events = session_events(session=session, filters=filters)
        log = session_log(
            session=session,
            events=events[offset : offset + limit],
            viewer=request.user,
            ledger_rows=LEDGER_ROWS,
        )
        body: dict[str, Any] = dict(SessionOutput(session).data)
        ledger = [
            {
                "memory_id": row.id,
                "exists": row.memory is not None,
                "marks": [{"kind": m.kind, "at": m.at} for m in row.marks],
            }
            for row in log.ledger
        ]
        body.update(
            events_count=events.count(),
            offset=offset,
            limit=limit,
            events=EventOutput([_event_json(v) for v in log.events], many=True).data,
            ledger_count=log.ledger_ids,
            ledger=LedgerRowOutput(ledger, many=True).data,
        )
        return Response(body)


def _event_json(view: dict[str, Any]) -> dict[str, Any]:
    event = view["event"]
    data = {
        "id": event.pk,
        "kind": event.kind,
        "at": event.at,
        "turn": event.turn,
        "tokens": event.tokens,
        "payload": view["payload"],
    }
    keys = ("trigger", "source", "projection", "blocks", "text", "tool", "agent")
    data.update((k, view[k]) for k in keys if k in view)
    return data
