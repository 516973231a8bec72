"""Who and where: workspaces, memberships, API keys, agent sessions.

Every row that holds agent data belongs to a workspace and every query is
scoped by it, so that past one primary the data can be distributed by
`workspace_id` without a schema change.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from django.utils import timezone


class Workspace(models.Model):
    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Per-workspace limits and thresholds (recall budgets, decay τ, …), read
    # through `contexts.tenancy.selectors.workspace_setting` with documented defaults.
    settings = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["slug"]
        constraints = [
            # Slugs are compared case-insensitively in URLs people type.
            models.UniqueConstraint(Lower("slug"), name="workspace_slug_ci_unique"),
        ]

    def __str__(self) -> str:
        return self.slug


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        EDITOR = "editor", "Editor"
        VIEWER = "viewer", "Viewer"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.EDITOR)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["workspace__slug", "user__username"]
        constraints = [
            models.UniqueConstraint(fields=["user", "workspace"], name="membership_unique"),
            models.CheckConstraint(
                condition=Q(role__in=["owner", "editor", "viewer"]), name="membership_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} ({self.role})"

    @property
    def can_write(self) -> bool:
        return self.role in (self.Role.OWNER, self.Role.EDITOR)

    @property
    def is_owner(self) -> bool:
        return self.role == self.Role.OWNER


class ApiKey(models.Model):
    """A bearer credential. The raw key is shown once; only its SHA-256 is kept.

    Keys are 32 random bytes, so a fast hash is as good as a slow one here:
    there is nothing to brute-force.
    """

    class Scope(models.TextChoices):
        READ = "read", "Read"
        WRITE = "write", "Write"
        ADMIN = "admin", "Admin"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys"
    )
    workspace = models.ForeignKey(
        Workspace, null=True, blank=True, on_delete=models.CASCADE, related_name="api_keys"
    )
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, unique=True)
    key_hash = models.CharField(max_length=64, unique=True)
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.WRITE)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(scope__in=["read", "write", "admin"]), name="apikey_scope_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or 'unnamed'})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class AgentSession(models.Model):
    """One conversation of one agent harness, identified by the harness's own id."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="sessions")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="agent_sessions",
    )
    external_id = models.CharField(max_length=200)
    app = models.CharField(max_length=64, blank=True)
    cwd = models.TextField(blank=True)
    # The project the session works in: the root directory the client resolved
    # (`project_root`: where .git or .dsh is), else its cwd. What it remembers is
    # kept with this project, and its recall prefers it.
    project = models.TextField(blank=True, default="")
    device = models.CharField(max_length=200, blank=True)
    params = models.JSONField(default=dict, blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    # The core memory documents as they were when the session started; what
    # the session is shown even after later writes (filled by `memories`).
    core_snapshot = models.JSONField(null=True, blank=True)
    # Layered summaries: bumped by every fold request; a running fold whose
    # generation is no longer current stops and writes nothing.
    fold_generation = models.PositiveIntegerField(default=0)
    # User turns so far: each `user-prompt` event starts one.
    turns = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-started_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "external_id"], name="agentsession_external_unique"
            ),
        ]
        indexes = [
            # The dashboard's session list: newest first within a workspace.
            models.Index(fields=["workspace", "-started_at"], name="agentsession_recent_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.app or 'agent'} session {self.external_id}"


class SessionEvent(models.Model):
    """The durable event log of a session: what happened and what was injected."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="events")
    kind = models.CharField(max_length=64)
    payload = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(auto_now_add=True)
    # The user turn the event belongs to (what precedes the first prompt is
    # turn 1) and its estimated size in tokens: what summary folds plan with.
    turn = models.PositiveIntegerField(default=1)
    tokens = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["at", "id"]
        indexes = [
            # "Preload once per session" and skill triggers scan a session's
            # events of one kind in order.
            models.Index(fields=["session", "kind", "at"], name="sessionevent_kind_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} at {self.at:%Y-%m-%d %H:%M:%S}"


class Declaration(models.Model):
    """What a directory declares (`.dsh/context.yaml`), kept on the server.

    `source_text` is the file as written and is what the resolver reads; the
    parsed lists are kept beside it for listing and search. `directory` is
    the absolute, normalised path of the declaring directory (the parent of
    `.dsh`) on the agents' machines.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="declarations")
    directory = models.TextField()
    source_text = models.TextField(blank=True)
    system_prompt = models.JSONField(default=list, blank=True)
    preload = models.JSONField(default=list, blank=True)
    inherit = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["directory"]
        constraints = [
            # Also the index every assembly uses to load a workspace's declarations.
            models.UniqueConstraint(
                fields=["workspace", "directory"], name="declaration_directory_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"declaration of {self.directory}"


class ContextDocument(models.Model):
    """A file a declaration names (or a legacy `memory/*.md`), kept on the server."""

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="context_documents"
    )
    path = models.TextField()
    content = models.TextField(blank=True)
    sha256 = models.CharField(max_length=64)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["path"]
        constraints = [
            # Also the index behind assembly reads (by path) and prefix listings.
            models.UniqueConstraint(
                fields=["workspace", "path"], name="contextdocument_path_unique"
            ),
        ]

    def __str__(self) -> str:
        return self.path


# --- flowctx: working memory for long sessions (seed 003) ----------------------------


class CompressionRef(models.Model):
    """The original of a projected tool result, retrievable byte for byte by its hash.

    One row per distinct content per workspace: the same output projected in
    two sessions is stored once.
    """

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="compression_refs"
    )
    sha256 = models.CharField(max_length=64)
    content = models.BinaryField()
    content_type = models.CharField(max_length=200, default="text/plain; charset=utf-8")
    size = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, blank=True)  # the projection's detected type
    projected_chars = models.PositiveIntegerField(null=True, blank=True)
    # What was masked before it was kept (`["AWS access key id", "2 x password"]`):
    # a credential is never stored, so an original that held one is kept with
    # each cut out, and is then not the output byte for byte. Empty: it is.
    # NULL: kept before this rule, never scanned (`compression_masked_legacy`).
    masked = models.JSONField(default=list, blank=True, null=True)
    tool_name = models.CharField(max_length=200, blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    session = models.ForeignKey(
        AgentSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    pinned = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # Also the index every retrieval by hash uses.
            models.UniqueConstraint(fields=["workspace", "sha256"], name="compressionref_unique"),
            models.CheckConstraint(
                condition=Q(sha256__regex=r"^[0-9a-f]{64}$"), name="compressionref_sha256_hex"
            ),
        ]
        indexes = [
            # The daily cleanup: unpinned refs past their expiry.
            models.Index(
                fields=["expires_at"],
                name="compressionref_expiry_idx",
                condition=Q(pinned=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.sha256[:12]} ({self.size} bytes)"


class SummaryNode(models.Model):
    """An engineer handoff note covering a span of a session's user turns.

    Leaves (depth 0) fold raw events; a node of depth d+1 condenses several
    of depth d, which then stop being active. `node_id` is
    `d{depth}-{start_turn}-{end_turn}`, what a model asks for to read it.
    """

    class Builder(models.TextChoices):
        LLM = "llm", "LLM"
        EXTRACTIVE = "extractive", "Extractive"

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="summaries")
    node_id = models.CharField(max_length=64)
    depth = models.PositiveSmallIntegerField()
    start_turn = models.PositiveIntegerField()
    end_turn = models.PositiveIntegerField()
    text = models.TextField()
    builder = models.CharField(max_length=16, choices=Builder.choices)
    tokens = models.PositiveIntegerField(default=0)  # estimated tokens of what it covers
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    generation = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["start_turn", "-depth"]
        constraints = [
            models.UniqueConstraint(fields=["session", "node_id"], name="summarynode_unique"),
            models.CheckConstraint(
                condition=Q(start_turn__lte=models.F("end_turn")), name="summarynode_span_valid"
            ),
        ]
        indexes = [
            # The active nodes of a session (no parent yet), in turn order.
            models.Index(
                fields=["session", "start_turn"],
                name="summarynode_active_idx",
                condition=Q(parent__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return self.node_id

    @property
    def is_active(self) -> bool:
        return self.parent_id is None


class Scratchpad(models.Model):
    """The model's own editable working memory for one session."""

    session = models.OneToOneField(
        AgentSession, on_delete=models.CASCADE, related_name="scratchpad"
    )
    text = models.TextField(blank=True)
    version = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"scratchpad of {self.session}"


class AuditEvent(models.Model):
    """One change a person or key made: who, through which door, when, to what.

    Written by the services (never by the interfaces, which only say who is
    calling: `contexts.tenancy.audit.Actor`). `target` names the object ("memory:42",
    "core:memory", "member:alice", "key:7") as a string, not a foreign key, so
    the row outlives what it describes: a purged memory's history stays.
    `workspace` is empty only for account-level changes (a key usable in
    every workspace).
    """

    class Origin(models.TextChoices):
        DASHBOARD = "dashboard", "Dashboard"
        REST = "rest", "REST API"
        MCP = "mcp", "MCP"
        HOOK = "hook", "Hook"
        IMPORT = "import", "Import"
        CLI = "cli", "Command line"
        SYSTEM = "system", "memflow itself"

    workspace = models.ForeignKey(
        Workspace, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    key = models.ForeignKey(
        ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    origin = models.CharField(max_length=16, choices=Origin.choices)
    action = models.CharField(max_length=48)  # memory.edit, memory.forget, key.revoke, …
    target = models.CharField(max_length=120, blank=True)
    before = models.TextField(blank=True)
    after = models.TextField(blank=True)
    detail = models.JSONField(default=dict, blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    origin__in=["dashboard", "rest", "mcp", "hook", "import", "cli", "system"]
                ),
                name="auditevent_origin_valid",
            ),
        ]
        indexes = [
            # The Activity page (`audit_list`): a workspace's changes, newest first.
            models.Index(fields=["workspace", "-at"], name="auditevent_recent_idx"),
            # One object's history (`audit_list(target=…)`): a memory's page.
            models.Index(fields=["workspace", "target", "-at"], name="auditevent_target_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.target} ({self.origin})"
