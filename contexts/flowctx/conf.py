"""flowctx's per-workspace knobs, registered with `contexts.tenancy.knobs` on import
(read them with `knob(workspace, name)`)."""

from __future__ import annotations

from contexts.tenancy.knobs import Knob, register_group, register_knobs

register_group(
    "projection",
    title="Long tool results",
    description="A tool result over the threshold reaches the model shortened; the whole "
    "original is stored and can be fetched by its hash.",
    order=50,
)
register_group(
    "summaries",
    title="Handoff notes",
    description="Long sessions are folded into layered notes, so a compacted or resumed "
    "session picks up where it was.",
    order=60,
)
register_group(
    "scratchpad",
    title="Scratchpad",
    description="The model's own editable working memory, one per session (seed 003, "
    "capability 4).",
    order=70,
)

register_knobs(
    [
        Knob(
            name="projection",
            group="projection",
            kind="bool",
            default=True,
            label="Shorten long tool results",
            help="Off: tool results reach the model as the tool wrote them.",
        ),
        Knob(
            name="projection_threshold_tokens",
            group="projection",
            kind="int",
            default=1000,
            label="Shorten above",
            help="Tool results longer than this are shortened.",
            unit="tokens",
            minimum=50,
            maximum=1_000_000,
        ),
        Knob(
            name="compression_ttl_days",
            group="projection",
            kind="int",
            default=7,
            label="Keep originals for",
            help="Days a stored original is kept; pinned ones are kept for good.",
            unit="days",
            minimum=1,
            maximum=3650,
        ),
        Knob(
            name="summaries",
            group="summaries",
            kind="bool",
            default=True,
            label="Write handoff notes",
            help="Off: sessions are never folded, and a compacted session restarts without notes.",
        ),
        Knob(
            name="summary_leaf_tokens",
            group="summaries",
            kind="int",
            default=40_000,
            label="History per note",
            help="A note is written once this much unfolded history has gathered.",
            unit="tokens",
            minimum=50,
            maximum=10_000_000,
        ),
        Knob(
            name="summary_keep_turns",
            group="summaries",
            kind="int",
            default=2,
            label="Recent turns kept whole",
            help="The last turns of a session are never folded into a note.",
            unit="turns",
            minimum=0,
            maximum=1000,
        ),
        Knob(
            name="summary_condense_fanout",
            group="summaries",
            kind="int",
            default=6,
            label="Notes per condensed note",
            help="This many notes of one level are condensed into one note of the next.",
            unit="notes",
            minimum=2,
            maximum=1000,
        ),
        Knob(
            name="summary_max_depth",
            group="summaries",
            kind="int",
            default=1,
            label="Condensing levels",
            help="How many times notes are condensed again; 0 keeps only the first notes.",
            unit="levels",
            minimum=0,
            maximum=10,
        ),
        Knob(
            name="scratchpad",
            group="scratchpad",
            kind="bool",
            default=False,
            label="Give the model a scratchpad",
            help="On: the model can keep notes for itself that survive compaction.",
        ),
        Knob(
            name="scratchpad_max_chars",
            group="scratchpad",
            kind="int",
            default=8000,
            label="Scratchpad size",
            help="The most characters a scratchpad holds.",
            unit="characters",
            minimum=20,
            maximum=1_000_000,
        ),
    ]
)
