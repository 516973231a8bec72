"""Project scope: a workspace shared by several projects prefers the asking one's memories.

A session knows its project (AgentSession.project: the root directory the
client resolved), and what it remembers is kept with it (Memory.project).
Two projects of one workspace often hold facts of the same shape ("the tests
run with ..."): a question asked in one is answered from its own first.

- A filter (`MemoryFilters.project`, REST `recall/`'s `project`, the MCP
  tools' `project`): only that project's entries and those of the whole
  workspace (no project).
- A preference (`project_preferred`, applied in recall once the candidates
  are weighted): another project's entry counts for OTHER_PROJECT_WEIGHT of
  its score and is marked with its project, so a workspace-wide entry and
  the asking project's stay above it, yet it stays findable.
"""

from __future__ import annotations

from typing import Any

from memories.selectors.search import _HIT

# What another project's entry's score is multiplied by.
OTHER_PROJECT_WEIGHT = 0.5

_PROJECT = _HIT.index("project")


def other_project(row_project: str, project: str | None) -> bool:
    """Whether an entry of `row_project` belongs to a project other than `project`."""
    return bool(project) and bool(row_project) and row_project != project


def project_preferred(
    weighed: list[tuple[float, Any, Any]], project: str | None
) -> list[tuple[float, Any, Any]]:
    """`weighed` ((score, row, item), best first) with other projects' entries weighing less."""
    if not project:
        return weighed
    adjusted = [
        (
            score * OTHER_PROJECT_WEIGHT if other_project(row[_PROJECT], project) else score,
            row,
            item,
        )
        for score, row, item in weighed
    ]
    adjusted.sort(key=lambda w: -w[0])
    return adjusted


def project_label(root: str) -> str:
    """A project as the model reads it: its directory's name."""
    return root.rstrip("/").rsplit("/", 1)[-1] or root
