"""The note written by the configured LLM, with the extractive note as its draft."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from contexts.flowctx.llm import LlmConfig, LlmError, llm_complete
from contexts.flowctx.notes.events import NoteEvent
from contexts.flowctx.notes.extractive import note_extractive
from contexts.flowctx.notes.format import (
    _NOTE_CHARS,
    FAILED,
    FILES,
    GOAL,
    IDENTIFIERS,
    NONE,
    OPEN,
    SECTIONS,
    WORKING,
    _clip,
    _fit,
    _lines,
    _middle_out,
    _parse,
    _render,
)
from contexts.flowctx.notes.tools import error_line

logger = logging.getLogger(__name__)

# How much of the session the LLM is shown (about 12,000 tokens).
_LLM_TRANSCRIPT_CHARS = 48_000
_LLM_MAX_TOKENS = 2_048


_SYSTEM_PROMPT = f"""You write engineer handoff notes. A coding agent's older conversation \
is being folded away; the next engineer will read only your note, so it must let them \
continue without redoing work or retrying what already failed.

Write exactly these six sections, with these headings, in this order, and nothing \
before or after them:

## {GOAL}
## {WORKING}
## {FAILED}
## {IDENTIFIERS}
## {FILES}
## {OPEN}

- {GOAL}: what the user wants now; earlier requests in a few words if they differ.
- {WORKING}: what was done and worked (commands, edits, results).
- {FAILED}: every approach that failed and the error it gave, so nobody retries it \
blindly; say when it was fixed later.
- {IDENTIFIERS}: session ids, commit hashes, function and class names, error names, \
test ids, copied character for character in backticks. Never shorten or paraphrase them.
- {FILES}: every file path touched or named, verbatim, with what happened to it.
- {OPEN}: unresolved errors, open questions, the next step.

Use short "- " bullet lines. Write {NONE} for an empty section. Stay under \
{_NOTE_CHARS} characters. When a prior note is given, merge it in: keep its facts \
unless the session superseded them, and do not repeat lines."""


def note_llm(events: Sequence[NoteEvent], *, config: LlmConfig) -> str:
    """A handoff note written by the configured LLM.

    The model gets the session (bounded), any prior notes and the extractive
    note as a draft. Its answer must read as a note with all six sections; one
    repair is asked for otherwise. Raises LlmError when no valid note comes back.
    """
    draft = note_extractive(events)
    priors = [e.text for e in events if e.kind == "note" and e.text.strip()]
    parts = []
    for prior in priors:
        parts.append(f"PRIOR NOTE (merge it in, do not repeat it):\n{_middle_out(prior, 6_000)}")
    parts.append(
        "MECHANICAL DRAFT (complete but crude: improve it, and keep its identifiers "
        f"and paths verbatim):\n{draft}"
    )
    parts.append(f"SESSION (oldest first):\n{_transcript(events)}")
    messages = [
        {"role": "system", "content": _SYSTEM_PROMPT},
        {"role": "user", "content": "\n\n".join(parts)},
    ]
    answer = llm_complete(
        messages=messages, config=config, max_tokens=_LLM_MAX_TOKENS, temperature=0.0
    )
    try:
        return _checked(answer)
    except ValueError as exc:
        problem = str(exc)
    logger.info("handoff note: the LLM's answer was not a note (%s); asking once more", problem)
    messages += [
        {"role": "assistant", "content": _clip(answer, 6_000)},
        {
            "role": "user",
            "content": (
                f"That answer cannot be used: {problem}. Reply with the complete note "
                "again: exactly the six sections "
                f"({', '.join(f'## {name}' for name in SECTIONS)}) in that order, "
                f"{NONE} for an empty one, nothing before or after."
            ),
        },
    ]
    answer = llm_complete(
        messages=messages, config=config, max_tokens=_LLM_MAX_TOKENS, temperature=0.0
    )
    try:
        return _checked(answer)
    except ValueError as exc:
        raise LlmError(f"the LLM did not write a valid handoff note: {exc}") from None


def _checked(answer: str) -> str:
    found = _parse(answer)
    missing = [name for name in SECTIONS if name not in found]
    if missing:
        raise ValueError(f"sections missing: {', '.join(missing)}")
    if not any(found.values()):
        raise ValueError("every section is empty")
    return _render(_fit({name: _lines(found[name]) for name in SECTIONS}))


def _transcript(events: Sequence[NoteEvent]) -> str:
    """The session as the model sees it, within `_LLM_TRANSCRIPT_CHARS`.

    Tool output is cut first (a failure keeps its tail, where the error is);
    if that is not enough, the middle of the span goes, since the draft already
    carries every command and error from it.
    """
    for output_chars in (1_200, 300, 0):
        lines = [_transcript_line(e, output_chars) for e in events if e.kind != "note"]
        text = "\n".join(lines)
        if len(text) <= _LLM_TRANSCRIPT_CHARS:
            return text
    head, tail = _LLM_TRANSCRIPT_CHARS // 3, _LLM_TRANSCRIPT_CHARS * 2 // 3
    return f"{text[:head]}\n[… the middle of the session is left out …]\n{text[-tail:]}"


def _transcript_line(event: NoteEvent, output_chars: int) -> str:
    where = f"[turn {event.turn}]"
    if event.kind == "prompt":
        return f"{where} USER: {_clip(event.text, 2_000)}"
    if event.kind == "assistant":
        return f"{where} ASSISTANT: {_clip(event.text, 1_500)}"
    status = "FAILED" if event.failed else "ok"
    line = f"{where} TOOL {event.tool_name} `{_clip(event.tool_input, 400)}` → {status}"
    if output_chars and event.text:
        text = event.text
        if len(text) > output_chars:
            keep = output_chars // 3
            head, tail = (
                (keep, output_chars - keep) if event.failed else (output_chars - keep, keep)
            )
            text = f"{text[:head]}\n…\n{text[-tail:]}"
        line += "\n  " + text.replace("\n", "\n  ")
    elif not output_chars and event.failed:
        line += f": {error_line(event.text)}"
    return line


def note_build(events: Sequence[NoteEvent], *, config: LlmConfig | None) -> tuple[str, str]:
    """(note, "llm" | "extractive"): the LLM's note when one is configured and
    answers with a valid note, the extractive note otherwise."""
    if config is not None:
        try:
            return note_llm(events, config=config), "llm"
        except LlmError as exc:
            logger.warning("handoff note: LLM unavailable (%s); using the extractive note", exc)
    return note_extractive(events), "extractive"
