"""What is remembered: memories, their lineage, and what was done with them.

A memory is current while `valid_to` is NULL. Superseding closes it (sets
`valid_to` and `superseded_by`) instead of deleting it, so "what did we
believe then" stays answerable. Lexical matching uses memflow's own term
index (`lex`: term → frequency, see `memories.lexical`) scored as BM25 with
per-workspace document frequencies in `LexicalTerm`.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from contexts.models import AgentSession, Workspace


class Memory(models.Model):
    class Source(models.TextChoices):
        MODEL = "model", "Model"  # the calling model decided to remember it
        HOOK = "hook", "Hook"  # captured mechanically by a hook
        IMPORT = "import", "Import"
        CONSOLIDATION = "consolidation", "Consolidation"
        # What a session did, kept from its handoff notes (services.work_capture).
        SESSION = "session", "Session"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memories")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    text = models.TextField()
    # sha256 of the normalised text: exact-duplicate lookups without reading text.
    norm_hash = models.CharField(max_length=64)
    embedding = VectorField(dimensions=384, null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True)
    # While the workspace re-embeds with another model (`WorkspaceEmbedder`),
    # the new vector waits here (not indexed, so writing it is cheap); recall
    # keeps using `embedding` until every row has one, then the two are
    # exchanged. Cleared whenever the text changes.
    embedding_next = VectorField(dimensions=384, null=True, blank=True)
    embedding_next_model = models.CharField(max_length=200, blank=True, default="")
    lex = models.JSONField(default=dict, blank=True)
    lex_len = models.PositiveIntegerField(default=0)

    compartment = models.CharField(max_length=64, blank=True, default="")
    state_key = models.CharField(max_length=200, blank=True, default="")
    state_value = models.TextField(blank=True, default="")
    valid_from = models.DateTimeField(default=timezone.now)
    valid_to = models.DateTimeField(null=True, blank=True)
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes"
    )

    source = models.CharField(max_length=16, choices=Source.choices, default=Source.MODEL)
    app = models.CharField(max_length=64, blank=True, default="")
    # The project (a root directory, as AgentSession.project) the entry was said in;
    # "" for one that holds across the workspace. Recall prefers the asking project's.
    project = models.TextField(blank=True, default="")
    session = models.ForeignKey(
        AgentSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="memories"
    )
    strength = models.FloatField(default=1.0)
    access_count = models.PositiveIntegerField(default=0)
    last_accessed = models.DateTimeField(default=timezone.now)
    pinned = models.BooleanField(default=False)
    # Private: only its author (`user`) reads it, through any key or the
    # dashboard; everyone else, owners included, never sees it (filters in
    # memories.selectors.entries).
    private = models.BooleanField(default=False)
    # Archive entries of a transient kind expire (core → archive moves).
    expires_at = models.DateTimeField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    evidence = models.ManyToManyField(
        "self", through="MemoryEvidence", symmetrical=False, related_name="conclusions", blank=True
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    # Forget leaves a tombstone: the row is closed (`valid_to`, so every
    # "current" query already skips it) and marked here, until a restore
    # reopens it or a purge (explicit, or the daily cleanup past
    # `forget_retention_days`) deletes it.
    forgotten_at = models.DateTimeField(null=True, blank=True)
    forgotten_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    forgotten_reason = models.TextField(blank=True, default="")
    # What a restore needs to undo the forget: was it current, which
    # predecessor did forgetting reopen.
    forgotten_undo = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # At most one current entry per state key: the state chain's invariant.
            models.UniqueConstraint(
                fields=["workspace", "state_key"],
                condition=Q(valid_to__isnull=True) & ~Q(state_key=""),
                name="memory_one_current_state",
            ),
            models.CheckConstraint(
                condition=Q(valid_to__isnull=True) | Q(valid_to__gte=F("valid_from")),
                name="memory_validity_ordered",
            ),
            models.CheckConstraint(
                condition=~Q(superseded_by=F("id")), name="memory_not_superseded_by_itself"
            ),
            models.CheckConstraint(
                condition=Q(source__in=["model", "hook", "import", "consolidation", "session"]),
                name="memory_source_valid",
            ),
            models.CheckConstraint(condition=~Q(text=""), name="memory_text_not_empty"),
            models.CheckConstraint(
                condition=Q(forgotten_at__isnull=True) | Q(valid_to__isnull=False),
                name="memory_forgotten_is_closed",
            ),
        ]
        indexes = [
            # Dense arm of recall and the dedupe probe: ORDER BY embedding <=> q.
            HnswIndex(
                name="memory_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
            # Lexical arm: candidates whose term map has any selected query term (lex ?| terms).
            # Its pending list is kept short (selectors.SEARCH_SETTINGS).
            GinIndex(fields=["lex"], name="memory_lex_gin"),
            # Substring search (paths, IDs, CJK) in the list API and dashboard: text ILIKE '%…%'.
            GinIndex(fields=["text"], opclasses=["gin_trgm_ops"], name="memory_text_trgm"),
            # Exact-duplicate check in remember: current entries with the same normalised text.
            models.Index(
                fields=["workspace", "norm_hash"],
                condition=Q(valid_to__isnull=True),
                name="memory_current_norm_idx",
            ),
            # Recall restricted to a compartment (lessons, the archive) sizes it first.
            models.Index(
                fields=["workspace", "compartment"],
                condition=Q(valid_to__isnull=True),
                name="memory_compartment_idx",
            ),
            # Lists, session packs and stats: a workspace's entries by age.
            models.Index(fields=["workspace", "-created_at"], name="memory_recent_idx"),
            # The daily purge of tombstones past their window, and the list of forgotten ones.
            models.Index(
                fields=["workspace", "forgotten_at"],
                condition=Q(forgotten_at__isnull=False),
                name="memory_forgotten_idx",
            ),
            # State history: one key's chain, oldest first.
            models.Index(
                fields=["workspace", "state_key", "valid_from"],
                condition=~Q(state_key=""),
                name="memory_state_history_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.text[:60]}"

    @property
    def is_current(self) -> bool:
        return self.valid_to is None

    @property
    def is_forgotten(self) -> bool:
        return self.forgotten_at is not None


class WorkspaceEmbedder(models.Model):
    """Which embedder a workspace's vectors come from, and the re-embed under way, if any.

    No row means the default backend. `backend` is the one serving recall;
    `target_backend`, when set, is the one the workspace asked for and whose
    vectors are being computed into `Memory.embedding_next` in the
    background (`memories.tasks.reembed_step`). `generation` grows with every
    request, so a step started for an older request stops.

    When every row has its new vector, the columns are exchanged. A large
    workspace does that in chunks (`swapping`): each chunk rewrites its rows
    into every index, the HNSW graph included, so a single statement would
    hold the workspace's writes for minutes. Meanwhile the dense arm ranks
    by the old model, reading each row's old vector from whichever column
    holds it (an exact scan: `selectors.dense_arm`).
    """

    workspace = models.OneToOneField(
        Workspace, primary_key=True, on_delete=models.CASCADE, related_name="+"
    )
    backend = models.CharField(max_length=32)
    target_backend = models.CharField(max_length=32, blank=True, default="")
    target_model = models.CharField(max_length=200, blank=True, default="")
    generation = models.PositiveIntegerField(default=0)
    cursor = models.BigIntegerField(default=0)  # the last memory id of the current sweep
    swapping = models.BooleanField(default=False)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True, default="")

    def __str__(self) -> str:
        if self.target_backend:
            return f"{self.backend} -> {self.target_backend} ({self.done}/{self.total})"
        return self.backend


class MemoryEvidence(models.Model):
    """A consolidation rests on these memories; the originals stay."""

    conclusion = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="evidence_links")
    evidence = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="conclusion_links")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["conclusion", "evidence"], name="memoryevidence_unique"
            ),
            models.CheckConstraint(
                condition=~Q(conclusion=F("evidence")), name="memoryevidence_not_self"
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.conclusion_id} rests on #{self.evidence_id}"


class LexicalTerm(models.Model):
    """Document frequency of a term in a workspace: BM25's idf."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    term = models.CharField(max_length=200)
    df = models.IntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "term"], name="lexicalterm_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.term!r}: {self.df}"


class DedupeEvent(models.Model):
    """A remember that did not add a row: what came in, and what it did.

    Kept so that any fold can be inspected and undone: the incoming text is
    stored verbatim, and a merge keeps the text it replaced in a tombstone.
    """

    class Kind(models.TextChoices):
        STRENGTHEN = "strengthen", "Strengthened"
        MERGE = "merge", "Merged"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="dedupe_events")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    incoming_text = models.TextField()
    previous_text = models.TextField(blank=True)
    tombstone = models.ForeignKey(
        Memory, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    similarity = models.FloatField(null=True, blank=True)
    source = models.CharField(max_length=16, blank=True)
    app = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    undone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.kind} #{self.memory_id}"


class InjectionEvent(models.Model):
    """The usegate ledger: a memory id entered a model's context, or was used.

    `memory_id` is a plain integer, not a foreign key: forgetting a memory
    must not rewrite the history of what the model was shown.
    """

    class Kind(models.TextChoices):
        INJECTED = "injected", "Injected"
        EXPANDED = "expanded", "Expanded"
        RECALLED = "recalled", "Recalled"
        SUPERSEDED = "superseded", "Superseded"
        # Named as #id in the model's answer at the end of its turn.
        CITED = "cited", "Cited"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="injections")
    memory_id = models.BigIntegerField()
    kind = models.CharField(max_length=16, choices=Kind.choices)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["at", "id"]
        indexes = [
            # Ledger rates: a workspace's events by time; a session's marks per memory.
            models.Index(fields=["workspace", "at"], name="injection_workspace_idx"),
            models.Index(fields=["session", "memory_id"], name="injection_session_memory_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.memory_id}"


class CoreMemory(models.Model):
    """A bounded document of fact lines, each ending in ` §` (HME's core memory).

    USER: one per user, shared across all their workspaces. MEMORY: one per
    workspace. The hard character limit forces the model to choose what is
    worth keeping; what no longer fits moves down to the archive (the memory
    library). `line_meta` keeps, per line, when it was added and last touched,
    so the least recently used lines can be offered for the archive.
    """

    class Scope(models.TextChoices):
        USER = "user", "USER"
        WORKSPACE = "memory", "MEMORY"

    scope = models.CharField(max_length=8, choices=Scope.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    workspace = models.ForeignKey(
        Workspace, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    content = models.TextField(blank=True, default="")
    char_limit = models.PositiveIntegerField()
    version = models.PositiveIntegerField(default=0)
    line_meta = models.JSONField(default=dict, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user"], condition=Q(scope="user"), name="corememory_one_user_doc"
            ),
            models.UniqueConstraint(
                fields=["workspace"],
                condition=Q(scope="memory"),
                name="corememory_one_workspace_doc",
            ),
            models.CheckConstraint(
                condition=(Q(scope="user", user__isnull=False, workspace__isnull=True))
                | (Q(scope="memory", workspace__isnull=False, user__isnull=True)),
                name="corememory_owner_matches_scope",
            ),
        ]

    def __str__(self) -> str:
        owner = self.user if self.scope == self.Scope.USER else self.workspace
        return f"{self.get_scope_display()} of {owner}"


class CoreRevision(models.Model):
    """Every change to a core document: who, from which session, what, before/after."""

    core = models.ForeignKey(CoreMemory, on_delete=models.CASCADE, related_name="revisions")
    version = models.PositiveIntegerField()
    action = models.CharField(max_length=16)  # add | replace | remove | revert | import | move
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    session = models.ForeignKey(
        AgentSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    before = models.TextField(blank=True)
    after = models.TextField(blank=True)
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-version"]
        constraints = [
            models.UniqueConstraint(fields=["core", "version"], name="corerevision_unique_version"),
        ]

    def __str__(self) -> str:
        return f"v{self.version} {self.action}"


class TriageDecision(models.Model):
    """A settled item of the dashboard's queue, so that it does not come back.

    `memory_ids` is the sorted pair of a conflict, or the one id of a fading
    entry; `decision` says how it was settled.
    """

    class Kind(models.TextChoices):
        CONFLICT = "conflict", "Conflict"
        FADING = "fading", "Fading"

    class Decision(models.TextChoices):
        KEEP_BOTH = "keep_both", "Kept both"
        DISMISS = "dismiss", "Dismissed"
        CONSOLIDATE = "consolidate", "Consolidated"
        SUPERSEDE = "supersede", "Superseded"
        KEEP = "keep", "Kept"
        LET_FADE = "let_fade", "Let fade"
        FORGET = "forget", "Forgotten"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    memory_ids = ArrayField(models.BigIntegerField())
    decision = models.CharField(max_length=16, choices=Decision.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-at"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "kind", "memory_ids"], name="triagedecision_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.memory_ids}: {self.decision}"
