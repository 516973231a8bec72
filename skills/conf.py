"""Per-workspace knobs of the skills app, with their defaults (`Workspace.settings`).

Skills global to a user (no workspace) are curated with these defaults.

Generation (on each turn end, `stop`):

- `skills_generation`: "auto" drafts a skill from a qualifying turn in the
  background and saves it; "confirm" saves nothing and nudges instead (the
  skill is drafted and saved when the proposal is accepted); "off" never
  drafts, and the nudge asks the agent to write the skill itself if it is
  worth keeping.
- `skills_nudges`: whether a qualifying turn that was not saved automatically
  is mentioned once at the start of the next turn.
- A turn qualifies when any trigger holds: more than `skills_trigger_tool_calls`
  tool calls; an error fixed within the turn (`skills_trigger_error_fix`); a
  user correction (`skills_trigger_corrections`); the turn ran longer than
  `skills_trigger_seconds`. A threshold of 0 turns that trigger off.
- `skills_dedupe_cosine`: a proposal this close (cosine of name + description
  embeddings) to an existing skill becomes a new version of it.

Evolution:

- `skills_optimization` / `skills_optimize_after`: rewrite a skill's body after
  this many uses with feedback since its last version.
- `skills_curator`, `skills_stale_days`, `skills_archive_days`,
  `skills_merge_cosine`, `skills_max`: the daily curator (seed 002, §7:
  staleDays 30, archiveDays 90, maxSkills 100).
"""

from __future__ import annotations

from typing import Any

from contexts.models import Workspace

GENERATION_MODES = ("auto", "confirm", "off")

DEFAULTS: dict[str, Any] = {
    "skills_generation": "auto",
    "skills_nudges": True,
    "skills_trigger_tool_calls": 5,
    "skills_trigger_error_fix": True,
    "skills_trigger_corrections": True,
    "skills_trigger_seconds": 180,
    "skills_dedupe_cosine": 0.9,
    "skills_optimization": True,
    "skills_optimize_after": 5,
    "skills_curator": True,
    "skills_stale_days": 30,
    "skills_archive_days": 90,
    "skills_merge_cosine": 0.9,
    "skills_max": 100,
}


def skill_setting(workspace: Workspace | None, name: str) -> Any:
    """The workspace's value of `name`, or its default (always the default with no workspace)."""
    value = (workspace.settings or {}).get(name) if workspace is not None else None
    return DEFAULTS[name] if value is None else value
