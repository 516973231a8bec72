"""A forgotten entry's REST doors: restore it, or purge it for good (owners)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from contexts.tenancy.auth import request_user
from contexts.tenancy.selectors import Access
from memories import selectors, services
from memories.api.memories import MemoryApiView, MemoryOutput, memory_json, rest_actor


class MemoryRestoreApi(MemoryApiView):
    @extend_schema(operation_id="memory_restore", request=None, responses=MemoryOutput)
    def post(self, request: Request, slug: str, memory_id: int) -> Response:
        memory = selectors.memory_get(
            workspace=self.workspace,
            memory_id=memory_id,
            forgotten=True,
            viewer_id=request_user(request).pk,
        )
        memory = services.memory_restore(
            workspace=self.workspace, memory=memory, actor=rest_actor(request)
        )
        return Response(memory_json(memory))


class MemoryPurgeApi(MemoryApiView):
    """Delete an entry and the texts its audit rows kept, for good (owners)."""

    method_access = {"POST": Access.ADMIN}

    @extend_schema(operation_id="memory_purge", request=None, responses={204: None})
    def post(self, request: Request, slug: str, memory_id: int) -> Response:
        memory = selectors.memory_get(
            workspace=self.workspace,
            memory_id=memory_id,
            forgotten=True,
            viewer_id=request_user(request).pk,
        )
        services.memory_purge(workspace=self.workspace, memory=memory, actor=rest_actor(request))
        return Response(status=status.HTTP_204_NO_CONTENT)
