"""`GET /api/v1/health`: is this process able to serve? No authentication."""

from __future__ import annotations

from django.db import connection
from drf_spectacular.utils import extend_schema, inline_serializer
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
        responses=inline_serializer(
            "Health",
            {
                "status": serializers.ChoiceField(choices=["ok", "degraded"]),
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
        return Response(
            {
                "status": "ok" if healthy else "degraded",
                "database": database,
                "embeddings": embedding_text,
                "version": __version__,
            },
            status=200 if healthy else 503,
        )
