"""What has been learned to do: skills, their versions and uses, and how they evolved.

A skill is what a harness's skill catalogue shows (name + description) and
loads on demand (the Markdown body), in Claude Code's and dsh's format. It
belongs to a workspace, or to one user across workspaces (`owner`, no
workspace). Every body ever written is a `SkillVersion`; nothing the
evolution does overwrites one. Every evolution step (a proposal, a new
version, a curator transition, a nudge) is a `SkillEvent` with its reason.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from pgvector.django import VectorField

from contexts.models import AgentSession, Workspace

# Claude Code's rule for skill names: lowercase letters, digits and hyphens, at most 64.
NAME_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"
NAME_MAX = 64
# Claude Code truncates longer descriptions in its catalogue.
DESCRIPTION_MAX = 1024


class Source(models.TextChoices):
    """Who wrote a version (and so who brought a skill into being)."""

    PERSON = "person", "Person or agent, through the API"
    GENERATOR = "generator", "Generated from a trajectory"
    OPTIMIZER = "optimizer", "Rewritten from feedback"
    CURATOR = "curator", "Merged by the curator"
    IMPORT = "import", "Imported from a skills folder"


class Skill(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        STALE = "stale", "Stale"  # unused for a while; still in the catalogue
        ARCHIVED = "archived", "Archived"  # out of the catalogue; restorable

    workspace = models.ForeignKey(
        Workspace, null=True, blank=True, on_delete=models.CASCADE, related_name="skills"
    )
    # Set for a skill global to a user (then `workspace` is NULL).
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="global_skills",
    )
    name = models.CharField(max_length=NAME_MAX)
    description = models.CharField(max_length=DESCRIPTION_MAX)
    body = models.TextField()
    # Front-matter keys other than name and description (allowed-tools, …),
    # kept so an import → export round trip gives the same SKILL.md back.
    metadata = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    version = models.PositiveIntegerField(default=1)
    origin = models.CharField(max_length=16, choices=Source.choices, default=Source.PERSON)
    # Embedding of "name: description", for dedupe and the curator's merges.
    embedding = VectorField(dimensions=384, null=True, blank=True)
    use_count = models.PositiveIntegerField(default=0)
    success_count = models.PositiveIntegerField(default=0)
    failure_count = models.PositiveIntegerField(default=0)
    last_used_at = models.DateTimeField(null=True, blank=True)
    # The last sign of life (created, used, edited, re-learned, restored): what
    # the curator measures staleness from.
    active_at = models.DateTimeField(default=timezone.now)
    merged_into = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="absorbed"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            # Also the index behind the catalogue and every lookup by name.
            models.UniqueConstraint(
                fields=["workspace", "name"],
                condition=Q(workspace__isnull=False),
                name="skill_name_unique_in_workspace",
            ),
            # The same for a user's global skills.
            models.UniqueConstraint(
                fields=["owner", "name"],
                condition=Q(workspace__isnull=True),
                name="skill_name_unique_for_owner",
            ),
            models.CheckConstraint(
                condition=Q(workspace__isnull=False, owner__isnull=True)
                | Q(workspace__isnull=True, owner__isnull=False),
                name="skill_one_scope",
            ),
            models.CheckConstraint(condition=Q(name__regex=NAME_PATTERN), name="skill_name_slug"),
            models.CheckConstraint(
                condition=Q(status__in=["active", "stale", "archived"]), name="skill_status_valid"
            ),
            models.CheckConstraint(condition=Q(version__gte=1), name="skill_version_positive"),
            models.CheckConstraint(
                condition=~Q(merged_into=F("id")), name="skill_not_merged_into_itself"
            ),
        ]
        indexes = [
            # The curator: a workspace's skills in a status, idlest first.
            models.Index(fields=["workspace", "status", "active_at"], name="skill_curator_idx"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def scope(self) -> str:
        return "workspace" if self.workspace_id is not None else "user"


class SkillVersion(models.Model):
    """One body a skill had, with why it was written."""

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    description = models.CharField(max_length=DESCRIPTION_MAX)
    body = models.TextField()
    why = models.TextField()
    source = models.CharField(max_length=16, choices=Source.choices)
    # A curator merge: the skill whose history was folded into this version.
    merged_from = models.ForeignKey(
        Skill, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    session = models.ForeignKey(
        AgentSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["skill", "version"]
        constraints = [
            # Also the index behind a skill's version list.
            models.UniqueConstraint(fields=["skill", "version"], name="skillversion_unique"),
            models.CheckConstraint(condition=~Q(why=""), name="skillversion_has_why"),
        ]

    def __str__(self) -> str:
        return f"{self.skill} v{self.version}"


class SkillUse(models.Model):
    """A skill loaded in a session (outcome pending) or reported on afterwards."""

    class Outcome(models.TextChoices):
        PENDING = "pending", "Pending"  # loaded; no outcome reported yet
        SUCCESS = "success", "Success"
        FAILURE = "failure", "Failure"

    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="uses")
    version = models.PositiveIntegerField()  # the version that was used
    session = models.ForeignKey(
        AgentSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="skill_uses"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    outcome = models.CharField(max_length=16, choices=Outcome.choices, default=Outcome.PENDING)
    feedback = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    rated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(outcome__in=["pending", "success", "failure"]),
                name="skilluse_outcome_valid",
            ),
        ]
        indexes = [
            # The optimizer's count: uses with feedback of the current version.
            models.Index(
                fields=["skill", "version"],
                condition=~Q(feedback=""),
                name="skilluse_feedback_idx",
            ),
            # Pairing reported feedback with the session's earlier load.
            models.Index(
                fields=["skill", "session"],
                condition=Q(outcome="pending"),
                name="skilluse_pending_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.skill} used ({self.outcome})"


class SkillProposal(models.Model):
    """A turn that qualified for a skill, and what became of it.

    One per (session, turn): a turn end reported twice proposes once. A
    worker claims a queued proposal with a conditional update, so a retried
    or duplicated job drafts it once.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Waiting for confirmation"
        QUEUED = "queued", "Queued"
        DRAFTING = "drafting", "Being drafted"
        APPLIED = "applied", "Applied"
        FAILED = "failed", "Failed"

    class Builder(models.TextChoices):
        LLM = "llm", "LLM"
        DETERMINISTIC = "deterministic", "Deterministic"

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="skill_proposals"
    )
    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, related_name="skill_proposals"
    )
    turn = models.PositiveIntegerField()
    # [{"kind": "tool_calls" | "error_fix" | "correction" | "long_turn", "detail": "…"}]
    triggers = models.JSONField(default=list)
    mode = models.CharField(max_length=16)  # skills_generation when the turn ended
    status = models.CharField(max_length=16, choices=Status.choices)
    builder = models.CharField(max_length=16, choices=Builder.choices, blank=True)
    draft_name = models.CharField(max_length=NAME_MAX, blank=True)
    draft_description = models.CharField(max_length=DESCRIPTION_MAX, blank=True)
    draft_body = models.TextField(blank=True)
    skill = models.ForeignKey(
        Skill, null=True, blank=True, on_delete=models.SET_NULL, related_name="proposals"
    )
    outcome = models.CharField(max_length=16, blank=True)  # "created" | "versioned"
    similarity = models.FloatField(null=True, blank=True)  # to the skill it versioned
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    claimed_at = models.DateTimeField(null=True, blank=True)
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["session", "turn"], name="skillproposal_turn_unique"),
            models.CheckConstraint(
                condition=Q(status__in=["pending", "queued", "drafting", "applied", "failed"]),
                name="skillproposal_status_valid",
            ),
        ]
        indexes = [
            # The proposal list of a workspace, newest first.
            models.Index(fields=["workspace", "-created_at"], name="skillproposal_recent_idx"),
        ]

    def __str__(self) -> str:
        return f"proposal from {self.session} turn {self.turn} ({self.status})"


class Nudge(models.Model):
    """A short note for the next prompt of a session: the last turn looked reusable.

    Shown once: the provider claims it by setting `delivered_at` with a
    conditional update.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="skill_nudges")
    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="skill_nudges")
    proposal = models.OneToOneField(SkillProposal, on_delete=models.CASCADE, related_name="nudge")
    text = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)
    delivered_turn = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(delivered_at__isnull=True, delivered_turn__isnull=True)
                | Q(delivered_at__isnull=False, delivered_turn__isnull=False),
                name="nudge_delivery_complete",
            ),
        ]
        indexes = [
            # Every user prompt: the session's nudges not shown yet.
            models.Index(
                fields=["session"],
                condition=Q(delivered_at__isnull=True),
                name="nudge_pending_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"nudge for {self.session} ({'shown' if self.delivered_at else 'pending'})"


class SkillEvent(models.Model):
    """The evolution log: what happened to which skill, and why."""

    class Kind(models.TextChoices):
        PROPOSED = "proposed", "Proposed from a turn"
        ACCEPTED = "accepted", "Proposal accepted"
        CREATED = "created", "Created"
        VERSIONED = "versioned", "New version"
        OPTIMIZED = "optimized", "Optimized from feedback"
        STALED = "staled", "Marked stale"
        REVIVED = "revived", "Used again"
        ARCHIVED = "archived", "Archived"
        RESTORED = "restored", "Restored"
        MERGED = "merged", "Merged"
        NUDGED = "nudged", "Nudge queued"
        NUDGE_SHOWN = "nudge_shown", "Nudge shown"
        FAILED = "failed", "Failed"

    workspace = models.ForeignKey(
        Workspace, null=True, blank=True, on_delete=models.CASCADE, related_name="skill_events"
    )
    # The owner of a global skill the event is about (no workspace then).
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    skill = models.ForeignKey(
        Skill, null=True, blank=True, on_delete=models.CASCADE, related_name="events"
    )
    proposal = models.ForeignKey(
        SkillProposal, null=True, blank=True, on_delete=models.SET_NULL, related_name="events"
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    reason = models.TextField()
    data = models.JSONField(default=dict, blank=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    session = models.ForeignKey(
        AgentSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=~Q(reason=""), name="skillevent_has_reason"),
        ]
        indexes = [
            # The evolution log of a workspace, newest first.
            models.Index(fields=["workspace", "-created_at"], name="skillevent_recent_idx"),
            # The log of one skill.
            models.Index(fields=["skill", "-created_at"], name="skillevent_skill_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.reason[:60]}"
