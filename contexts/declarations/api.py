"""REST endpoints for directory declarations, stored documents and context
assembly, under /api/v1/workspaces/{slug}/."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from contexts.declarations import MAX_DECLARATION_BYTES, MAX_FILE_BYTES
from contexts.declarations.config import ConfigError, ContextConfig
from contexts.errors import Invalid
from contexts.models import AgentSession, ContextDocument, Declaration
from contexts.rest.base import PAGE_PARAMETERS, WorkspaceApiView, page_response, page_schema
from contexts.tenancy import selectors, services
from contexts.tenancy.auth import request_user
from contexts.tenancy.selectors import Access

MAX_ENV_VALUE = 256 * 1024


# --- assembly ----------------------------------------------------------------


class SectionOutput(serializers.Serializer):
    name = serializers.CharField()
    order = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=["identity", "params"])
    text = serializers.CharField(trim_whitespace=False)
    source = serializers.CharField(  # type: ignore[assignment]
        allow_null=True, help_text="The file read (absolute path)."
    )
    display = serializers.CharField(help_text="The path as declared, variables substituted.")
    origin = serializers.ChoiceField(choices=["declaration", "config", "env"])
    sha256 = serializers.CharField()


class PreloadFileOutput(serializers.Serializer):
    path = serializers.CharField()
    display = serializers.CharField()
    origin = serializers.ChoiceField(choices=["declaration", "legacy", "config", "env"])
    sha256 = serializers.CharField(help_text="Of the whole file, even when a part was sent.")
    bytes = serializers.IntegerField()
    sent_bytes = serializers.IntegerField()
    limited = serializers.BooleanField(help_text="Cut by perFileBytes or totalBytes.")


class PreloadOutput(serializers.Serializer):
    text = serializers.CharField(trim_whitespace=False, help_text="The one first user message.")
    sha256 = serializers.CharField()
    files = PreloadFileOutput(many=True)
    left_out = serializers.ListField(child=serializers.CharField())


class DeclarationRefOutput(serializers.Serializer):
    path = serializers.CharField()
    directory = serializers.CharField()
    sha256 = serializers.CharField()
    inherit = serializers.BooleanField()


class DeliveredContextOutput(serializers.Serializer):
    session_id = serializers.CharField()
    event_id = serializers.IntegerField(help_text="The session event recording this assembly.")
    directory = serializers.CharField()
    declarations = DeclarationRefOutput(many=True, help_text="Outer declarations first.")
    system_sections = SectionOutput(
        many=True, help_text="Identity sections in order, then the per-run params."
    )
    preload = PreloadOutput(
        allow_null=True, help_text="Only the first time a session is given it; null after."
    )
    preload_delivered_at = serializers.DateTimeField(
        allow_null=True, help_text="When this session was given its preload, if before now."
    )
    notes = serializers.ListField(child=serializers.CharField())
    warnings = serializers.ListField(child=serializers.CharField())
    suppressed = serializers.BooleanField()


def delivered_json(delivered: services.DeliveredContext) -> dict[str, Any]:
    assembly = delivered.assembly
    data = {
        "session_id": delivered.session.external_id,
        "event_id": delivered.event.pk,
        "directory": assembly.directory,
        "declarations": [d.to_json() for d in assembly.declarations],
        "system_sections": [s.to_json() for s in assembly.sections],
        "preload": delivered.preload.to_json() if delivered.preload else None,
        "preload_delivered_at": delivered.preload_delivered_at,
        "notes": list(assembly.notes),
        "warnings": list(assembly.warnings),
        "suppressed": assembly.suppressed,
    }
    return dict(DeliveredContextOutput(data).data)


class _SessionInput(serializers.Serializer):
    session_id = serializers.CharField(max_length=200, help_text="The harness's session id.")
    app = serializers.CharField(max_length=64, required=False, allow_blank=True, default="")
    device = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        default="",
        help_text="The agent's ${device}, as its machine resolved it; empty: look up "
        "stored .device documents, then fall back to the host name.",
    )
    hostname = serializers.CharField(max_length=255, required=False, allow_blank=True, default="")
    env = serializers.DictField(
        child=serializers.CharField(
            allow_blank=True, trim_whitespace=False, max_length=MAX_ENV_VALUE
        ),
        required=False,
        default=dict,
        help_text="The run's DSH_CONTEXT_* variables (no other names are accepted).",
    )
    delegation_depth = serializers.IntegerField(min_value=0, required=False, default=0)


class _ContextApiView(WorkspaceApiView):
    # A POST here writes the session's log (the session, its assembly event,
    # its one preload delivery), so it needs the write role and a write key,
    # as every other write does (403 `read_only_role` / `key_scope`). Viewers
    # see what a directory is given on the dashboard's side-effect-free preview.

    def session_for(self, request: Request, values: dict[str, Any], cwd: str) -> AgentSession:
        return services.agent_session_get_or_create(
            workspace=self.workspace,
            external_id=values["session_id"],
            user=request_user(request),
            app=values["app"],
            cwd=cwd,
            device=values["device"],
        )


class ContextAssembleApi(_ContextApiView):
    """What a session opened in `directory` is given, from the stored declarations."""

    class InputSerializer(_SessionInput):
        directory = serializers.CharField(
            max_length=services.MAX_PATH_CHARS,
            trim_whitespace=False,
            help_text="The session's working directory (absolute).",
        )

    @extend_schema(
        operation_id="context_assemble", request=InputSerializer, responses=DeliveredContextOutput
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        session = self.session_for(request, values, cwd=values["directory"])
        delivered = services.context_assemble(
            workspace=self.workspace,
            session=session,
            directory=values["directory"],
            device=values["device"] or None,
            hostname=values["hostname"] or None,
            env=values["env"],
            delegation_depth=values["delegation_depth"],
        )
        return Response(delivered_json(delivered))


class ContextRecordApi(_ContextApiView):
    """Record an assembly resolved on the agent's own disk (`memflow context --json`).

    The answer is the same as `contexts/assemble/`: the preload is present
    only the first time the session is given one.
    """

    class InputSerializer(_SessionInput):
        assembly = serializers.JSONField(help_text="The output of `memflow context --json`.")

    @extend_schema(
        operation_id="context_record", request=InputSerializer, responses=DeliveredContextOutput
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        assembly = services.context_assembly_from_json(values["assembly"])
        session = self.session_for(request, values, cwd=assembly.directory)
        delivered = services.context_assembly_record(
            session=session,
            assembly=assembly,
            origin="client",
            request={
                "device": values["device"],
                "hostname": values["hostname"],
                "env": dict(sorted(values["env"].items())),
                "delegation_depth": values["delegation_depth"],
            },
        )
        return Response(delivered_json(delivered))


class ContextConfigApi(WorkspaceApiView):
    """The workspace's resolver options, spelt as in the MEMFLOW design."""

    method_access = {"PUT": Access.ADMIN}

    class OutputSerializer(serializers.Serializer):
        options = serializers.DictField(help_text="Every option with its effective value.")
        error = serializers.CharField(
            allow_null=True, help_text="Why the stored options are unusable, if they are."
        )

    def _answer(self) -> Response:
        try:
            config, error = selectors.context_config_for(workspace=self.workspace), None
        except ConfigError as exc:
            config, error = ContextConfig(), str(exc)
        return Response(
            self.OutputSerializer({"options": config.to_mapping(), "error": error}).data
        )

    @extend_schema(operation_id="context_config_get", responses=OutputSerializer)
    def get(self, request: Request, slug: str) -> Response:
        return self._answer()

    @extend_schema(
        operation_id="context_config_set",
        request=OpenApiTypes.OBJECT,
        responses=OutputSerializer,
        description="Replace the options (owners). Unset options take their defaults.",
    )
    def put(self, request: Request, slug: str) -> Response:
        if not isinstance(request.data, dict):
            raise Invalid("The options are a JSON object.", code="invalid_config")
        services.context_config_set(workspace=self.workspace, options=request.data)
        return self._answer()


# --- declarations ----------------------------------------------------------------


class DeclarationOutput(serializers.Serializer):
    id = serializers.IntegerField()
    directory = serializers.CharField()
    source_text = serializers.CharField(trim_whitespace=False)
    system_prompt = serializers.ListField(child=serializers.CharField())
    preload = serializers.ListField(child=serializers.CharField())
    inherit = serializers.BooleanField()
    updated_at = serializers.DateTimeField()


class DeclarationListCreateApi(WorkspaceApiView):
    class InputSerializer(serializers.Serializer):
        directory = serializers.CharField(
            max_length=services.MAX_PATH_CHARS,
            trim_whitespace=False,
            help_text="The declaring directory (absolute): the parent of `.dsh`.",
        )
        source_text = serializers.CharField(
            max_length=MAX_DECLARATION_BYTES,
            allow_blank=True,
            trim_whitespace=False,
            help_text="The `.dsh/context.yaml` text.",
        )

    @extend_schema(
        operation_id="declaration_list",
        parameters=[
            OpenApiParameter("directory", str, description="Only this directory."),
            *PAGE_PARAMETERS,
        ],
        responses=page_schema("DeclarationPage", DeclarationOutput),
    )
    def get(self, request: Request, slug: str) -> Response:
        declarations = selectors.declaration_list(
            workspace=self.workspace, directory=request.query_params.get("directory", "")
        )
        return page_response(
            request,
            declarations,
            default=200,
            maximum=1000,
            render=lambda rows: DeclarationOutput(rows, many=True).data,
        )

    @extend_schema(
        operation_id="declaration_store",
        request=InputSerializer,
        responses={200: DeclarationOutput, 201: DeclarationOutput},
        description="Create or replace a directory's declaration. One that does not parse "
        "answers 400 `invalid_declaration` with its `line`.",
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        declaration, created = services.declaration_store(
            workspace=self.workspace, **data.validated_data
        )
        return Response(
            DeclarationOutput(declaration).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class DeclarationDetailApi(WorkspaceApiView):
    @extend_schema(operation_id="declaration_get", responses=DeclarationOutput)
    def get(self, request: Request, slug: str, declaration_id: int) -> Response:
        declaration: Declaration = selectors.declaration_get(
            workspace=self.workspace, declaration_id=declaration_id
        )
        return Response(DeclarationOutput(declaration).data)

    @extend_schema(operation_id="declaration_delete", responses={204: None})
    def delete(self, request: Request, slug: str, declaration_id: int) -> Response:
        services.declaration_delete(workspace=self.workspace, declaration_id=declaration_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- documents -----------------------------------------------------------------


class DocumentOutput(serializers.Serializer):
    id = serializers.IntegerField()
    path = serializers.CharField()
    sha256 = serializers.CharField()
    updated_at = serializers.DateTimeField()


class DocumentDetailOutput(DocumentOutput):
    content = serializers.CharField(trim_whitespace=False)


class DocumentListCreateApi(WorkspaceApiView):
    class InputSerializer(serializers.Serializer):
        class DocumentInput(serializers.Serializer):
            path = serializers.CharField(max_length=services.MAX_PATH_CHARS, trim_whitespace=False)
            content = serializers.CharField(
                allow_blank=True, trim_whitespace=False, max_length=MAX_FILE_BYTES
            )

        documents = DocumentInput(many=True, allow_empty=False)

    class OutputSerializer(serializers.Serializer):
        class StoredOutput(serializers.Serializer):
            path = serializers.CharField()
            sha256 = serializers.CharField()
            bytes = serializers.IntegerField()

        stored = StoredOutput(many=True)

    @extend_schema(
        operation_id="document_list",
        parameters=[
            OpenApiParameter("prefix", str, description="Only paths starting with this."),
            *PAGE_PARAMETERS,
        ],
        responses=page_schema("DocumentPage", DocumentOutput),
    )
    def get(self, request: Request, slug: str) -> Response:
        documents = selectors.context_document_list(
            workspace=self.workspace, prefix=request.query_params.get("prefix", "")
        )
        return page_response(
            request,
            documents,
            default=200,
            maximum=1000,
            render=lambda rows: DocumentOutput(rows, many=True).data,
        )

    @extend_schema(
        operation_id="document_store",
        request=InputSerializer,
        responses=OutputSerializer,
        description="Create or replace documents by path (at most 1,000 a call, all or none).",
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        stored = services.context_documents_store(
            workspace=self.workspace,
            documents=[(d["path"], d["content"]) for d in data.validated_data["documents"]],
        )
        return Response(self.OutputSerializer({"stored": stored}).data)


class DocumentDetailApi(WorkspaceApiView):
    @extend_schema(operation_id="document_get", responses=DocumentDetailOutput)
    def get(self, request: Request, slug: str, document_id: int) -> Response:
        document: ContextDocument = selectors.context_document_get(
            workspace=self.workspace, document_id=document_id
        )
        return Response(DocumentDetailOutput(document).data)

    @extend_schema(operation_id="document_delete", responses={204: None})
    def delete(self, request: Request, slug: str, document_id: int) -> Response:
        services.context_document_delete(workspace=self.workspace, document_id=document_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
