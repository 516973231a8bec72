"""OpenAPI: describe the bearer-key scheme to drf-spectacular."""

from __future__ import annotations

from typing import Any, Literal

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema


class ApiKeyScheme(OpenApiAuthenticationExtension):
    target_class = "contexts.tenancy.auth.ApiKeyAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "An API key from `memflow createkey` or the dashboard's API keys page.",
        }


class MemflowAutoSchema(AutoSchema):
    """Names nested serializers after their view: `MemoryBulkApi.InputSerializer`
    becomes the component `MemoryBulkApiInput`, so the many `InputSerializer`s
    of the house style never collide in the schema."""

    def get_serializer_name(
        self, serializer: Any, direction: Literal["request", "response"]
    ) -> str:
        qualname = type(serializer).__qualname__
        if "." in qualname:
            return qualname.replace(".", "").replace("Serializer", "")
        return super().get_serializer_name(serializer, direction)
