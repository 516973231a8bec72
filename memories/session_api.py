"""REST `sessions/{session_id}/`: what one session saw and why, as the
dashboard's session page shows it (memories/session_log.py).

Here rather than in `contexts/api.py` beside the session list because the
ledger marks and the USER document are the `memories` app's.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from contexts import dashboard_selectors as dash_selectors
from contexts.api import SessionOutput
from contexts.api_base import WorkspaceApiView
from contexts.selectors import agent_session_get
from memories.session_log import LEDGER_ROWS, session_log


class MarkOutput(serializers.Serializer):
    kind = serializers.CharField(help_text="injected, expanded, recalled or superseded")
    at = serializers.DateTimeField()


class BlockMemoryOutput(serializers.Serializer):
    id = serializers.IntegerField()
    exists = serializers.BooleanField(help_text="false: forgotten since")
    marks = serializers.ListField(
        child=serializers.CharField(), help_text="the ledger kinds this id has in the session"
    )


class BlockOutput(serializers.Serializer):
    name = serializers.CharField()
    order = serializers.IntegerField(allow_null=True)
    why = serializers.CharField(help_text="what this family of blocks is for")
    text = serializers.CharField(help_text="empty when withheld")
    withheld = serializers.BooleanField(
        help_text="the session user's USER document: only that user reads it"
    )
    sha256 = serializers.CharField()
    memories = BlockMemoryOutput(many=True)


class EventOutput(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.CharField()
    at = serializers.DateTimeField()
    turn = serializers.IntegerField()
    tokens = serializers.IntegerField()
    trigger = serializers.CharField(required=False, help_text="injections: the hook event")
    blocks = BlockOutput(many=True, required=False, help_text="injections: what was given")
    text = serializers.CharField(required=False, help_text="a prompt's or a reply's text")
    tool = serializers.CharField(required=False, help_text="a tool event's tool name")
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

    class OutputSerializer(SessionOutput):
        events_count = serializers.IntegerField(help_text="events in the whole session")
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
        "`offset` page them), each injection with its blocks, why each was given and the "
        "memory ids in it, and the session's ledger marks per memory id.",
    )
    def get(self, request: Request, slug: str, session_id: str) -> Response:
        params = self.Params(data=request.query_params)
        params.is_valid(raise_exception=True)
        offset, limit = params.validated_data["offset"], params.validated_data["limit"]
        session = agent_session_get(workspace=self.workspace, external_id=session_id)
        events = dash_selectors.session_events(session=session)
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
    data.update((k, view[k]) for k in ("trigger", "blocks", "text", "tool") if k in view)
    return data
