"""REST endpoints of the skills app, under /api/v1/workspaces/{slug}/skills/.

- `skills/`: the catalogue (name + description: the harness loads bodies on
  demand), and create.
- `skills/{name}/`: the whole skill (a use is recorded with `?session_id=`),
  and edit (a new version, with why).
- `skills/{name}/archive/`, `…/restore/`, `…/uses/`, `…/versions/`.
- `skills/export/` and `skills/import/`: a tar.gz of `<name>/SKILL.md`.
- `skills/events/`: the evolution log. `skills/proposals/`: qualifying turns;
  `…/{id}/accept/` confirms one.

Skills global to a user appear beside the workspace's with `scope: "user"`;
`?scope=` picks one when both have a name.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from django.http import HttpResponse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import BaseParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from contexts.errors import Invalid
from contexts.models import AgentSession
from contexts.rest.base import PAGE_PARAMETERS, WorkspaceApiView, page_response, page_schema
from contexts.tenancy.auth import request_user
from skills import folder, selectors, services, tasks
from skills.models import DESCRIPTION_MAX, NAME_MAX, Skill, SkillEvent, SkillProposal, SkillUse

SCOPE_CHOICES = list(selectors.SCOPES)


class ScopeField(serializers.ChoiceField):
    """`workspace`, or `user` for a skill global to its owner."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=SCOPE_CHOICES, **kwargs)


class SkillOutput(serializers.Serializer):
    name = serializers.CharField()
    scope = ScopeField()
    description = serializers.CharField()
    body = serializers.CharField()
    metadata = serializers.DictField()
    status = serializers.ChoiceField(choices=Skill.Status.choices)
    version = serializers.IntegerField()
    origin = serializers.CharField()
    use_count = serializers.IntegerField()
    success_count = serializers.IntegerField()
    failure_count = serializers.IntegerField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    merged_into = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()


def skill_json(skill: Skill) -> dict[str, Any]:
    return dict(
        SkillOutput(
            {
                "name": skill.name,
                "scope": skill.scope,
                "description": skill.description,
                "body": skill.body,
                "metadata": skill.metadata or {},
                "status": skill.status,
                "version": skill.version,
                "origin": skill.origin,
                "use_count": skill.use_count,
                "success_count": skill.success_count,
                "failure_count": skill.failure_count,
                "last_used_at": skill.last_used_at,
                "merged_into": skill.merged_into.name if skill.merged_into else None,
                "created_at": skill.created_at,
                "updated_at": skill.updated_at,
            }
        ).data
    )


class ScopeParams(serializers.Serializer):
    scope = ScopeField(
        required=False,
        help_text="When the workspace and your global skills share a name: which one.",
    )


class SkillApiView(WorkspaceApiView):
    def skill_for(self, request: Request, name: str) -> Skill:
        params = ScopeParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        return selectors.skill_get(
            workspace=self.workspace,
            user=request_user(request),
            name=name,
            scope=params.validated_data.get("scope"),
        )

    def session_for(self, request: Request, external_id: str | None) -> AgentSession | None:
        return self.own_session(request, external_id)


# --- the catalogue and one skill ----------------------------------------------------------------


class CatalogueEntry(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    scope = ScopeField()


class SkillListCreateApi(SkillApiView):
    class ListParams(serializers.Serializer):
        status = serializers.ChoiceField(choices=selectors.STATUS_FILTERS, default="available")
        scope = ScopeField(required=False)

    OutputSerializer = page_schema("SkillCataloguePage", CatalogueEntry)

    class InputSerializer(serializers.Serializer):
        name = serializers.CharField(max_length=NAME_MAX)
        description = serializers.CharField(max_length=DESCRIPTION_MAX)
        body = serializers.CharField(max_length=services.MAX_BODY_CHARS)
        scope = ScopeField(default="workspace")
        why = serializers.CharField(required=False, allow_blank=True, max_length=2_000)
        session_id = serializers.CharField(required=False, allow_blank=True, max_length=200)

    @extend_schema(
        operation_id="skill_list",
        parameters=[ListParams, *PAGE_PARAMETERS],
        responses=OutputSerializer,
        description="The catalogue: name, description and scope of each skill; bodies are "
        "loaded one at a time. `status=available` (default) is active and stale skills.",
    )
    def get(self, request: Request, slug: str) -> Response:
        params = self.ListParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        skills = selectors.skill_list(
            workspace=self.workspace,
            user=request_user(request),
            status=params.validated_data["status"],
            scope=params.validated_data.get("scope"),
        ).only("name", "description", "workspace_id", "owner_id")
        return page_response(
            request,
            skills,
            default=200,
            maximum=500,
            render=lambda rows: [
                dict(
                    CatalogueEntry(
                        {"name": s.name, "description": s.description, "scope": s.scope}
                    ).data
                )
                for s in rows
            ],
        )

    @extend_schema(
        operation_id="skill_create", request=InputSerializer, responses={201: SkillOutput}
    )
    def post(self, request: Request, slug: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        user = request_user(request)
        skill = services.skill_create(
            workspace=self.workspace,
            user=user,
            name=values["name"],
            description=values["description"],
            body=values["body"],
            scope=values["scope"],
            why=values.get("why", ""),
            session=self.session_for(request, values.get("session_id")),
        )
        return Response(skill_json(skill), status=status.HTTP_201_CREATED)


class SkillDetailApi(SkillApiView):
    class GetParams(ScopeParams):
        session_id = serializers.CharField(
            required=False,
            max_length=200,
            help_text="The harness's session loading the skill: recorded as a use.",
        )

    class InputSerializer(serializers.Serializer):
        description = serializers.CharField(required=False, max_length=DESCRIPTION_MAX)
        body = serializers.CharField(required=False, max_length=services.MAX_BODY_CHARS)
        why = serializers.CharField(max_length=2_000)
        session_id = serializers.CharField(required=False, allow_blank=True, max_length=200)

    @extend_schema(operation_id="skill_get", parameters=[GetParams], responses=SkillOutput)
    def get(self, request: Request, slug: str, name: str) -> Response:
        params = self.GetParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        skill = self.skill_for(request, name)
        session = self.session_for(request, params.validated_data.get("session_id"))
        if session is not None:
            services.skill_use_record(skill=skill, session=session, user=request_user(request))
            skill.refresh_from_db()
        return Response(skill_json(skill))

    @extend_schema(
        operation_id="skill_edit",
        parameters=[ScopeParams],
        request=InputSerializer,
        responses=SkillOutput,
        description="A new version with the given description and/or body; the old one is kept.",
    )
    def patch(self, request: Request, slug: str, name: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        skill = self.skill_for(request, name)
        skill = services.skill_edit(
            skill=skill,
            user=request_user(request),
            why=values["why"],
            description=values.get("description"),
            body=values.get("body"),
            session=self.session_for(request, values.get("session_id")),
        )
        return Response(skill_json(skill))


class ReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=2_000)


class SkillArchiveApi(SkillApiView):
    @extend_schema(
        operation_id="skill_archive",
        parameters=[ScopeParams],
        request=ReasonSerializer,
        responses=SkillOutput,
    )
    def post(self, request: Request, slug: str, name: str) -> Response:
        data = ReasonSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        skill = services.skill_archive(
            skill=self.skill_for(request, name),
            user=request_user(request),
            reason=data.validated_data.get("reason", ""),
        )
        return Response(skill_json(skill))


class SkillRestoreApi(SkillApiView):
    @extend_schema(
        operation_id="skill_restore",
        parameters=[ScopeParams],
        request=ReasonSerializer,
        responses=SkillOutput,
    )
    def post(self, request: Request, slug: str, name: str) -> Response:
        data = ReasonSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        skill = services.skill_restore(
            skill=self.skill_for(request, name),
            user=request_user(request),
            reason=data.validated_data.get("reason", ""),
        )
        return Response(skill_json(skill))


# --- uses and versions ------------------------------------------------------------------------


class SkillUseOutput(serializers.Serializer):
    id = serializers.IntegerField()
    version = serializers.IntegerField()
    session_id = serializers.CharField(allow_null=True)
    outcome = serializers.ChoiceField(choices=SkillUse.Outcome.choices)
    feedback = serializers.CharField()
    created_at = serializers.DateTimeField()
    rated_at = serializers.DateTimeField(allow_null=True)


def use_json(use: SkillUse) -> dict[str, Any]:
    return dict(
        SkillUseOutput(
            {
                "id": use.pk,
                "version": use.version,
                "session_id": use.session.external_id if use.session else None,
                "outcome": use.outcome,
                "feedback": use.feedback,
                "created_at": use.created_at,
                "rated_at": use.rated_at,
            }
        ).data
    )


class SkillUsesApi(SkillApiView):
    class InputSerializer(serializers.Serializer):
        outcome = serializers.ChoiceField(choices=["success", "failure"])
        feedback = serializers.CharField(required=False, allow_blank=True, max_length=10_000)
        session_id = serializers.CharField(required=False, allow_blank=True, max_length=200)

    class OutputSerializer(serializers.Serializer):
        use = SkillUseOutput()
        optimization_queued = serializers.BooleanField()

    @extend_schema(
        operation_id="skill_use_list",
        parameters=[ScopeParams, *PAGE_PARAMETERS],
        responses=page_schema("SkillUsePage", SkillUseOutput),
    )
    def get(self, request: Request, slug: str, name: str) -> Response:
        skill = self.skill_for(request, name)
        return page_response(
            request,
            selectors.skill_uses(skill=skill),
            default=100,
            maximum=500,
            render=lambda rows: [use_json(u) for u in rows],
        )

    @extend_schema(
        operation_id="skill_use_record",
        parameters=[ScopeParams],
        request=InputSerializer,
        responses={201: OutputSerializer},
        description="How a use went. With a `session_id` that loaded the skill, it completes "
        "that use. Enough uses with feedback since the last version queue a rewrite.",
    )
    def post(self, request: Request, slug: str, name: str) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values: dict[str, Any] = data.validated_data
        skill = self.skill_for(request, name)
        use = services.skill_feedback_record(
            skill=skill,
            session=self.session_for(request, values.get("session_id")),
            user=request_user(request),
            outcome=values["outcome"],
            feedback=values.get("feedback", ""),
        )
        skill.refresh_from_db()
        queued = tasks.optimize_enqueue_if_due(skill=skill)
        return Response(
            {"use": use_json(use), "optimization_queued": queued}, status=status.HTTP_201_CREATED
        )


class SkillVersionsApi(SkillApiView):
    class OutputSerializer(serializers.Serializer):
        version = serializers.IntegerField()
        description = serializers.CharField()
        body = serializers.CharField()
        why = serializers.CharField()
        source = serializers.CharField()  # type: ignore[assignment]
        merged_from = serializers.CharField(allow_null=True)
        created_by = serializers.CharField(allow_null=True)
        created_at = serializers.DateTimeField()

    @extend_schema(
        operation_id="skill_version_list",
        parameters=[ScopeParams, *PAGE_PARAMETERS],
        responses=page_schema("SkillVersionPage", OutputSerializer),
    )
    def get(self, request: Request, slug: str, name: str) -> Response:
        skill = self.skill_for(request, name)
        return page_response(request, selectors.skill_versions(skill=skill), render=self._rows)

    def _rows(self, versions: list[Any]) -> Any:
        rows = [
            {
                "version": v.version,
                "description": v.description,
                "body": v.body,
                "why": v.why,
                "source": v.source,
                "merged_from": v.merged_from.name if v.merged_from else None,
                "created_by": v.created_by.get_username() if v.created_by else None,
                "created_at": v.created_at,
            }
            for v in versions
        ]
        return self.OutputSerializer(rows, many=True).data


# --- export and import ------------------------------------------------------------------------


class ArchiveParser(BaseParser):
    """A raw tar(.gz) body, whatever it is labelled (application/gzip, x-tar,
    octet-stream), as `{"archive": bytes}`."""

    media_type = "*/*"

    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        data = stream.read(folder.MAX_ARCHIVE_BYTES + 1) if stream is not None else b""
        return {"archive": bytes(data)}


class SkillExportApi(SkillApiView):
    class Params(serializers.Serializer):
        status = serializers.ChoiceField(choices=selectors.STATUS_FILTERS, default="available")

    @extend_schema(
        operation_id="skill_export",
        parameters=[Params],
        responses={(200, "application/gzip"): OpenApiTypes.BINARY},
        description="A tar.gz of the catalogue as a skills folder: `<name>/SKILL.md` with "
        "YAML front matter (name, description); unpack it into `~/.claude/skills/`.",
    )
    def get(self, request: Request, slug: str) -> HttpResponse:
        params = self.Params(data=request.query_params)
        params.is_valid(raise_exception=True)
        files = selectors.skills_export_files(
            workspace=self.workspace,
            user=request_user(request),
            status=params.validated_data["status"],
        )
        response = HttpResponse(folder.archive_build(files), content_type="application/gzip")
        stamp = timezone.now().strftime("%Y%m%d")
        response["Content-Disposition"] = (
            f'attachment; filename="{self.workspace.slug}-skills-{stamp}.tar.gz"'
        )
        return response


class SkillImportApi(SkillApiView):
    parser_classes = [JSONParser, MultiPartParser, ArchiveParser]

    class JsonInput(serializers.Serializer):
        archive_base64 = serializers.CharField()
        scope = ScopeField(default="workspace")

    class OutputSerializer(serializers.Serializer):
        created = serializers.ListField(child=serializers.CharField())
        versioned = serializers.ListField(child=serializers.CharField())
        unchanged = serializers.ListField(child=serializers.CharField())
        skipped = serializers.ListField(child=serializers.DictField())

    @extend_schema(
        operation_id="skill_import",
        parameters=[ScopeParams],
        request={
            "application/gzip": OpenApiTypes.BINARY,
            "multipart/form-data": {
                "type": "object",
                "properties": {"file": {"type": "string", "format": "binary"}},
            },
            "application/json": JsonInput,
        },
        responses=OutputSerializer,
        description="A tar(.gz) of a skills folder: `<name>/SKILL.md` (Claude Code) or "
        "`<name>.md` (dsh), as the raw body, a multipart `file`, or JSON `archive_base64`. "
        "New names are created; changed skills get a new version.",
    )
    def post(self, request: Request, slug: str) -> Response:
        params = ScopeParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        scope = params.validated_data.get("scope", "workspace")
        payload: Any = request.data
        is_map = isinstance(payload, Mapping)
        if is_map and isinstance(payload.get("archive"), bytes):
            data = payload["archive"]
        elif is_map and payload.get("file") is not None:
            data = payload["file"].read(folder.MAX_ARCHIVE_BYTES + 1)
        else:
            body = self.JsonInput(data=payload)
            body.is_valid(raise_exception=True)
            scope = body.validated_data["scope"] if "scope" not in params.validated_data else scope
            try:
                data = base64.b64decode(body.validated_data["archive_base64"], validate=True)
            except (binascii.Error, ValueError) as exc:
                raise Invalid(
                    "`archive_base64` is not valid base64.", code="invalid_base64"
                ) from exc
        if not data:
            raise Invalid("Send a tar.gz of a skills folder.", code="invalid_archive")
        report = services.skills_import(
            workspace=self.workspace, user=request_user(request), data=data, scope=scope
        )
        return Response(
            {
                "created": report.created,
                "versioned": report.versioned,
                "unchanged": report.unchanged,
                "skipped": report.skipped,
            }
        )


# --- the evolution log and proposals ----------------------------------------------------------


class SkillEventListApi(SkillApiView):
    class Params(serializers.Serializer):
        skill = serializers.CharField(required=False, max_length=NAME_MAX)
        kind = serializers.ChoiceField(choices=SkillEvent.Kind.choices, required=False)

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        kind = serializers.CharField()
        skill = serializers.CharField(allow_null=True)
        reason = serializers.CharField()
        data = serializers.DictField()  # type: ignore[assignment]
        actor = serializers.CharField(allow_null=True)
        session_id = serializers.CharField(allow_null=True)
        proposal = serializers.IntegerField(allow_null=True)
        created_at = serializers.DateTimeField()

    @extend_schema(
        operation_id="skill_event_list",
        parameters=[Params, OpenApiParameter("scope", str, required=False), *PAGE_PARAMETERS],
        responses=page_schema("SkillEventPage", OutputSerializer),
        description="Why skills appeared, changed, merged or were archived, newest first.",
    )
    def get(self, request: Request, slug: str) -> Response:
        params = self.Params(data=request.query_params)
        params.is_valid(raise_exception=True)
        values: dict[str, Any] = params.validated_data
        skill = self.skill_for(request, values["skill"]) if values.get("skill") else None
        events = selectors.skill_events(
            workspace=self.workspace, user=request_user(request), skill=skill
        )
        if values.get("kind"):
            events = events.filter(kind=values["kind"])
        return page_response(request, events, default=100, maximum=500, render=self._rows)

    def _rows(self, events: list[Any]) -> Any:
        rows = [
            {
                "id": e.pk,
                "kind": e.kind,
                "skill": e.skill.name if e.skill else None,
                "reason": e.reason,
                "data": e.data,
                "actor": e.actor.get_username() if e.actor else None,
                "session_id": e.session.external_id if e.session else None,
                "proposal": e.proposal_id,
                "created_at": e.created_at,
            }
            for e in events
        ]
        return self.OutputSerializer(rows, many=True).data


class ProposalOutput(serializers.Serializer):
    id = serializers.IntegerField()
    session_id = serializers.CharField()
    turn = serializers.IntegerField()
    triggers = serializers.ListField(child=serializers.DictField())
    mode = serializers.CharField()
    status = serializers.ChoiceField(choices=SkillProposal.Status.choices)
    builder = serializers.CharField()
    skill = serializers.CharField(allow_null=True)
    outcome = serializers.CharField()
    similarity = serializers.FloatField(allow_null=True)
    nudge = serializers.CharField(allow_null=True)
    nudge_shown_at = serializers.DateTimeField(allow_null=True)
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    processed_at = serializers.DateTimeField(allow_null=True)


def proposal_json(proposal: SkillProposal) -> dict[str, Any]:
    nudge = getattr(proposal, "nudge", None)
    return dict(
        ProposalOutput(
            {
                "id": proposal.pk,
                "session_id": proposal.session.external_id,
                "turn": proposal.turn,
                "triggers": proposal.triggers,
                "mode": proposal.mode,
                "status": proposal.status,
                "builder": proposal.builder,
                "skill": proposal.skill.name if proposal.skill else None,
                "outcome": proposal.outcome,
                "similarity": proposal.similarity,
                "nudge": nudge.text if nudge else None,
                "nudge_shown_at": nudge.delivered_at if nudge else None,
                "error": proposal.error,
                "created_at": proposal.created_at,
                "processed_at": proposal.processed_at,
            }
        ).data
    )


class ProposalListApi(SkillApiView):
    class Params(serializers.Serializer):
        status = serializers.ChoiceField(choices=SkillProposal.Status.choices, required=False)

    @extend_schema(
        operation_id="skill_proposal_list",
        parameters=[Params, *PAGE_PARAMETERS],
        responses=page_schema("SkillProposalPage", ProposalOutput),
    )
    def get(self, request: Request, slug: str) -> Response:
        params = self.Params(data=request.query_params)
        params.is_valid(raise_exception=True)
        proposals = selectors.proposal_list(
            workspace=self.workspace, status=params.validated_data.get("status")
        )
        return page_response(
            request,
            proposals,
            default=100,
            maximum=500,
            render=lambda rows: [proposal_json(p) for p in rows],
        )


class ProposalAcceptApi(SkillApiView):
    @extend_schema(
        operation_id="skill_proposal_accept",
        request=None,
        responses={202: ProposalOutput},
        description="Confirm a proposal waiting for confirmation: memflow drafts the skill "
        "from the turn in the background and saves it.",
    )
    def post(self, request: Request, slug: str, proposal_id: int) -> Response:
        proposal = selectors.proposal_get(workspace=self.workspace, proposal_id=proposal_id)
        proposal = services.proposal_accept(proposal=proposal, user=request_user(request))
        tasks.proposal_enqueue(proposal=proposal)
        return Response(proposal_json(proposal), status=status.HTTP_202_ACCEPTED)
