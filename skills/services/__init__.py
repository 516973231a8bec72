"""Writes of the skills app (a package: the catalogue, generation, maintenance).

Every name callers use is re-exported here: `from skills import services`.
"""

from __future__ import annotations

from skills.services.catalogue import (
    MAX_BODY_CHARS,
    RESERVED_NAMES,
    ImportReport,
    embed_text,
    skill_archive,
    skill_create,
    skill_edit,
    skill_feedback_record,
    skill_restore,
    skill_use_record,
    skill_vectors,
    skills_import,
)
from skills.services.generation import (
    Learned,
    nudges_deliver,
    proposal_accept,
    proposal_create,
    proposal_generate,
    skill_learn,
)
from skills.services.maintenance import CurateReport, skill_optimize, skills_curate

__all__ = [
    "MAX_BODY_CHARS",
    "RESERVED_NAMES",
    "CurateReport",
    "ImportReport",
    "Learned",
    "embed_text",
    "nudges_deliver",
    "proposal_accept",
    "proposal_create",
    "proposal_generate",
    "skill_archive",
    "skill_create",
    "skill_edit",
    "skill_feedback_record",
    "skill_learn",
    "skill_optimize",
    "skill_restore",
    "skill_use_record",
    "skill_vectors",
    "skills_curate",
    "skills_import",
]
