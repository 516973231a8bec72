"""`GET /api/v1/health`: is this process able to serve? No authentication.

Live and ready are two answers: the process answers and its database works
(`status` ok, 200) well before its embedding model has loaded (20-95 s after
a restart), and hooks are answered meanwhile by the words of a prompt
alone. `ready` says whether the model is there too; `?ready=1` asks for
readiness, answering 503 until then (a load balancer's readiness probe).
"""

from __future__ import annotations

from django.db import connection
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memflow_site.version import __version__
from memories import embeddings


class HealthApi(APIView):
    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="health",
        parameters=[
            OpenApiParameter("ready", bool, description="503 until the embedding model is loaded")
        ],
        responses=inline_serializer(
            "Health",
            {
                "status": serializers.ChoiceField(choices=["ok", "degraded"]),
                "live": serializers.BooleanField(),
                "ready": serializers.BooleanField(),
                "database": serializers.CharField(),
                "embeddings": serializers.CharField(),
                "version": serializers.CharField(),
            },
        ),
    )
    def get(self, request: Request) -> Response:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1")
            database = "ok"
        except Exception as exc:
            database = f"error: {type(exc).__name__}"
        state, error = embeddings.status()
        embedding_text = {"idle": "not_loaded", "loading": "loading", "ready": "ready"}.get(
            state, f"error: {error}"
        )
        healthy = database == "ok" and state != "error"
        ready = healthy and state == "ready"
        asks_ready = request.query_params.get("ready") not in (None, "", "0", "false")
        return Response(
            {
                "status": "ok" if healthy else "degraded",
                "live": True,
                "ready": ready,
                "database": database,
                "embeddings": embedding_text,
                "version": __version__,
            },
            status=200 if (ready if asks_ready else healthy) else 503,
        )
