"""The skills app's per-workspace knobs, registered with `contexts.tenancy.knobs` on import.

Skills global to a user (no workspace) are curated with the defaults.
"""

from __future__ import annotations

from contexts.tenancy.knobs import Knob, register_group, register_knobs

register_group(
    "skills-generation",
    title="Writing skills",
    description="At each turn's end, a turn worth repeating (many tool calls, an error fixed, "
    "a correction, a long turn) can become a skill the agent reuses.",
    order=80,
)
register_group(
    "skills-evolution",
    title="Improving and tidying skills",
    description="Skills are rewritten from the feedback on their uses, and a daily curator "
    "archives, merges and caps them.",
    order=90,
)


def _count(
    name: str,
    group: str,
    default: int,
    label: str,
    help: str,
    unit: str,
    top: int,
    zero_means: str = "",
) -> Knob:
    return Knob(
        name=name,
        group=group,
        kind="int",
        default=default,
        label=label,
        help=help,
        unit=unit,
        minimum=0,
        maximum=top,
        zero_means=zero_means,
    )


def _switch(name: str, group: str, default: bool, label: str, help: str) -> Knob:
    return Knob(name=name, group=group, kind="bool", default=default, label=label, help=help)


def _cosine(name: str, group: str, label: str, help: str) -> Knob:
    return Knob(
        name=name,
        group=group,
        kind="float",
        default=0.9,
        label=label,
        help=help + " Cosine of the name and description: 1 is the same meaning.",
        minimum=0,
        maximum=1,
    )


register_knobs(
    [
        Knob(
            name="skills_generation",
            group="skills-generation",
            kind="choice",
            default="auto",
            label="When a turn is worth a skill",
            help="Draft and save it in the background; or save nothing and suggest it at the next "
            "turn (saved once accepted); or never draft one.",
            choices=(
                ("auto", "save it automatically"),
                ("confirm", "suggest it, save when accepted"),
                ("off", "never draft one"),
            ),
        ),
        _switch(
            "skills_nudges",
            "skills-generation",
            True,
            "Mention unsaved skills",
            "A qualifying turn that was not saved is mentioned once at the start of the next turn.",
        ),
        _count(
            "skills_trigger_tool_calls",
            "skills-generation",
            5,
            "Tool calls that qualify",
            "A turn with more tool calls than this qualifies; 0 turns this trigger off.",
            "tool calls",
            1000,
            zero_means="off",
        ),
        _switch(
            "skills_trigger_error_fix",
            "skills-generation",
            True,
            "An error fixed qualifies",
            "A turn in which a failing step was made to work qualifies.",
        ),
        _switch(
            "skills_trigger_corrections",
            "skills-generation",
            True,
            "A correction qualifies",
            "A turn in which the user corrected the agent qualifies.",
        ),
        _count(
            "skills_trigger_seconds",
            "skills-generation",
            180,
            "A long turn qualifies after",
            "A turn that ran longer than this qualifies; 0 turns this trigger off.",
            "seconds",
            86_400,
            zero_means="off",
        ),
        _cosine(
            "skills_dedupe_cosine",
            "skills-generation",
            "Same skill above",
            "A new skill this close to an existing one becomes a new version of it.",
        ),
        _switch(
            "skills_optimization",
            "skills-evolution",
            True,
            "Rewrite skills from feedback",
            "A skill's body is rewritten once it has gathered enough uses with feedback.",
        ),
        _count(
            "skills_optimize_after",
            "skills-evolution",
            5,
            "Rewrite after",
            "Uses with feedback since the skill's last version before it is rewritten; 0 never "
            "rewrites.",
            "uses",
            1000,
            zero_means="never",
        ),
        _switch(
            "skills_curator",
            "skills-evolution",
            True,
            "Daily curator",
            "Once a day, mark unused skills stale, archive long-unused ones, merge "
            "near-duplicates and keep the count under the cap.",
        ),
        _count(
            "skills_stale_days",
            "skills-evolution",
            30,
            "Stale after",
            "Days without use after which the curator marks a skill stale; 0: never.",
            "days",
            3650,
            zero_means="never",
        ),
        _count(
            "skills_archive_days",
            "skills-evolution",
            90,
            "Archive after",
            "Days without use after which the curator archives a skill; 0: never.",
            "days",
            3650,
            zero_means="never",
        ),
        _cosine(
            "skills_merge_cosine",
            "skills-evolution",
            "Merge above",
            "The curator merges two skills this close.",
        ),
        _count(
            "skills_max",
            "skills-evolution",
            100,
            "Most skills kept",
            "Beyond this, the curator archives the least used skills; 0: no cap.",
            "skills",
            10_000,
            zero_means="no cap",
        ),
    ]
)
