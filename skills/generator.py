"""From a turn's trajectory to a skill: triggers, drafts, merges, rewrites.

Pure functions over `Trajectory` (one user turn read from the session's
event log) and Markdown text; the database work is in `services`.

- `turn_triggers`: whether a turn is worth a skill (seed 002, §5: more than
  5 tool calls, an error fixed within the turn, a user correction, longer
  than 3 minutes).
- `draft_deterministic`: a skill from the trajectory alone: steps from the
  successful calls, pitfalls from the failed ones, the user's correction.
- `draft_llm`: the same through the LLM port, given the deterministic draft.
- `body_merge`: two bodies section by section, no line twice (a near-duplicate
  proposal becoming a new version; the curator's merges).
- `body_with_feedback` / `body_optimize_llm`: the optimizer's rewrite.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

# The handoff notes' helpers, shared rather than copied: how a tool call is
# classified and which line of its output says why it failed.
from contexts.flowctx import (
    LlmConfig,
    LlmError,
    NoteEvent,
    error_line,
    fix_key,
    fix_pairs,
    is_inspection,
    llm_complete,
    tool_kind,
)
from skills.folder import FolderError, skill_md_parse
from skills.models import DESCRIPTION_MAX, NAME_MAX

logger = logging.getLogger(__name__)

_STEPS_MAX = 15
_PITFALLS_MAX = 10
_LINE_CHARS = 200
_DESCRIPTION_CHARS = 250
_BODY_MAX = 20_000
_LLM_TRANSCRIPT_CHARS = 24_000
_LLM_MAX_TOKENS = 2_048


@dataclass(frozen=True)
class Trajectory:
    """One user turn: the prompt that started it, its tool calls, how it ended."""

    session: str  # the harness's session id
    turn: int
    prompt: str
    previous_prompt: str  # the turn before's prompt: what a correction corrects
    tools: tuple[NoteEvent, ...]
    assistant: str  # the last assistant message, when the harness sends it
    seconds: float  # from the turn's first event to its end


@dataclass(frozen=True)
class Trigger:
    kind: str  # "tool_calls" | "error_fix" | "correction" | "long_turn"
    detail: str

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "detail": self.detail}


@dataclass(frozen=True)
class TriggerSettings:
    tool_calls: int = 5  # more than this many calls (0: off)
    error_fix: bool = True
    corrections: bool = True
    seconds: int = 180  # longer than this (0: off)


@dataclass(frozen=True)
class Draft:
    name: str
    description: str
    body: str
    metadata: dict[str, object] = field(default_factory=dict)


# --- triggers ---------------------------------------------------------------------------------

# What a user says when the agent went the wrong way. English phrases are
# matched on word boundaries; Chinese ones anywhere ("不对", "应该用…").
_CORRECTIONS_EN = re.compile(
    r"^\s*(?:no|nope|nah)\s*[,.!;:\u2014\u2013-]"
    r"|^\s*(?:no|nope)\s*$"
    r"|\bthat'?s (?:wrong|incorrect|not (?:right|correct|it|what i (?:asked|wanted|meant)))\b"
    r"|\b(?:that|this|it) (?:is|was) (?:wrong|incorrect|not (?:right|correct))\b"
    r"|\bnot what i (?:asked|wanted|meant|said)\b"
    r"|\bwrong (?:file|approach|way|command|place|branch|one)\b"
    r"|\byou (?:should(?:n'?t| not)?|shouldn'?t) have\b"
    r"|\bdon'?t (?:do|use) (?:that|this|it)\b"
    r"|\bi (?:said|told you|asked (?:you )?to)\b"
    r"|\buse \S+(?: \S+)? instead\b"
    r"|\binstead of (?:that|this)\b"
    r"|^\s*(?:actually|wait)\s*[,.!]"
    r"|\b(?:undo|revert) (?:that|this|it|your change)\b",
    re.IGNORECASE,
)
_CORRECTIONS_ZH = re.compile(
    r"不对|不是这样|错了|搞错|弄错|不是我要的|我说的是|不要这样|别这样|不应该|^\s*应该|你应该|应该用|应该是|"
    r"应该先|换成|改成|而不是|不要用|别用|重新来|撤销"
)


def correction_in(text: str) -> str | None:
    """The phrase that makes `text` a correction of the agent, or None."""
    text = text[:4_000]
    for pattern in (_CORRECTIONS_EN, _CORRECTIONS_ZH):
        match = pattern.search(text)
        if match:
            return match.group(0).strip(" ,.!;:\u2014\u2013-") or match.group(0)
    return None


def _label(event: NoteEvent) -> str:
    kind = tool_kind(event)
    target = _one_line(event.tool_input, 140)
    if kind == "edit":
        return f"Edit `{target}`"
    if kind == "write":
        return f"Write `{target}`"
    if kind == "read":
        return f"Read `{target}`"
    if kind == "shell":
        return f"`{target}`"
    name = event.tool_name or "tool"
    return f"{name} `{target}`" if target else name


def turn_triggers(trajectory: Trajectory, *, settings: TriggerSettings) -> list[Trigger]:
    """The reasons this turn is worth a skill; empty when it is not."""
    found: list[Trigger] = []
    calls = len(trajectory.tools)
    if settings.tool_calls > 0 and calls > settings.tool_calls:
        found.append(Trigger("tool_calls", f"{calls} tool calls (more than {settings.tool_calls})"))
    if settings.error_fix:
        fixed = [(failed, fix) for failed, fix in fix_pairs(trajectory.tools) if fix is not None]
        if fixed:
            failed, fix = fixed[0]
            error = error_line(failed.text)
            detail = f"{_label(failed)} failed" + (f" ({_one_line(error, 100)})" if error else "")
            assert fix is not None
            detail += f", then {_label(fix)} worked"
            found.append(Trigger("error_fix", detail))
    if settings.corrections:
        phrase = correction_in(trajectory.prompt)
        if phrase:
            found.append(Trigger("correction", f"the user corrected the agent: “{phrase}”"))
    if settings.seconds > 0 and trajectory.seconds > settings.seconds:
        minutes, seconds = divmod(int(trajectory.seconds), 60)
        found.append(
            Trigger(
                "long_turn",
                f"the turn took {minutes} min {seconds} s (over {settings.seconds} s)",
            )
        )
    return found


def triggers_summary(triggers: Sequence[dict[str, str]] | Sequence[Trigger]) -> str:
    details = [t.detail if isinstance(t, Trigger) else str(t.get("detail", "")) for t in triggers]
    return "; ".join(d for d in details if d)


# --- names ------------------------------------------------------------------------------------

_STOPWORDS = set(
    [
        "a",
        "an",
        "the",
        "to",
        "in",
        "on",
        "of",
        "for",
        "and",
        "or",
        "but",
        "with",
        "by",
        "from",
        "at",
        "as",
        "into",
        "onto",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "please",
        "can",
        "could",
        "would",
        "you",
        "your",
        "me",
        "my",
        "our",
        "we",
        "us",
        "i",
        "let",
        "lets",
        "let's",
        "now",
        "then",
        "just",
        "all",
        "some",
        "so",
        "do",
        "does",
        "did",
        "done",
        "also",
        "again",
        "here",
        "there",
        "what",
        "which",
        "how",
        "why",
        "when",
        "where",
        "should",
        "must",
        "will",
        "shall",
        "may",
        "might",
        "no",
        "not",
        "yes",
        "ok",
        "okay",
        "hey",
        "hi",
        "use",
        "using",
        "instead",
        "wrong",
        "right",
        "actually",
        "wait",
    ]
)


def slug_name(text: str, *, extra: Sequence[str] = ()) -> str:
    """A skill name (lowercase words joined by hyphens, at most 64 chars) for `text`.

    Words without ASCII letters (Chinese) cannot go into a name: `extra`
    (program and file names from the turn) fills in, then a hash.
    """
    words: list[str] = []
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        # Digits alone and one-letter fragments ("project's" → "s") name nothing.
        if word not in _STOPWORDS and word not in words and len(word) > 1 and not word.isdigit():
            words.append(word)
        if len(words) == 5:
            break
    if len(words) < 2:
        for word in extra:
            for part in re.findall(r"[a-z0-9]+", word.lower()):
                if (
                    part not in words
                    and part not in _STOPWORDS
                    and len(part) > 1
                    and not part.isdigit()
                ):
                    words.append(part)
            if len(words) >= 4:
                break
    name = ""
    for word in words:
        candidate = f"{name}-{word}" if name else word
        if len(candidate) > NAME_MAX:
            break
        name = candidate
    if not name:
        name = "skill-" + hashlib.sha256(text.encode()).hexdigest()[:8]
    return name


def name_valid(name: str) -> bool:
    return bool(re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", name)) and len(name) <= NAME_MAX


# --- the deterministic draft --------------------------------------------------------------------


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _task(trajectory: Trajectory) -> str:
    """What the turn was for: the prompt, or for a correction, what it corrected."""
    if correction_in(trajectory.prompt) and trajectory.previous_prompt:
        return trajectory.previous_prompt
    return trajectory.prompt or trajectory.previous_prompt


def _steps(tools: Sequence[NoteEvent]) -> list[str]:
    worked = [e for e in tools if not e.failed]
    useful = [
        e
        for e in worked
        if tool_kind(e) not in ("read",)
        and not (tool_kind(e) == "shell" and is_inspection(e.tool_input))
    ] or worked
    labels: list[str] = []
    for event in useful:
        label = _label(event)
        if label not in labels:
            labels.append(label)
    if len(labels) > _STEPS_MAX:
        labels = [*labels[: _STEPS_MAX - 1], f"… and {len(labels) - _STEPS_MAX + 1} more steps"]
    return [f"{n}. {_one_line(label, _LINE_CHARS)}" for n, label in enumerate(labels, start=1)]


def _pitfalls(tools: Sequence[NoteEvent]) -> list[str]:
    lines: list[str] = []
    for failed, fix in fix_pairs(tools):
        error = error_line(failed.text)
        line = f"- {_label(failed)} failed" + (f": {error}" if error else "")
        if fix is not None:
            line += f" — then {_label(fix)} worked"
        line = _one_line(line, _LINE_CHARS + 80)
        if line not in lines:
            lines.append(line)
    return lines[:_PITFALLS_MAX]


def _files(tools: Sequence[NoteEvent]) -> list[str]:
    return [
        e.tool_input for e in tools if tool_kind(e) in ("edit", "write", "read") and e.tool_input
    ]


def draft_deterministic(trajectory: Trajectory, triggers: Sequence[Trigger]) -> Draft:
    """A skill from the trajectory alone; the same trajectory gives the same draft."""
    task = _task(trajectory)
    task_line = _one_line(task, 160) or "a recurring task"
    programs = [fix_key(e)[1] for e in trajectory.tools if tool_kind(e) == "shell"]
    extra = [p for p in programs if p] + [
        f.rsplit("/", 1)[-1].split(".")[0] for f in _files(trajectory.tools)
    ]
    name = slug_name(task, extra=extra)
    steps = _steps(trajectory.tools)
    pitfalls = _pitfalls(trajectory.tools)
    correction = correction_in(trajectory.prompt)

    parts = []
    if steps:
        parts.append("the steps that worked")
    if pitfalls:
        parts.append("pitfalls to avoid")
    if correction:
        parts.append("the user's correction")
    description = task_line.rstrip(".。 ") + (f" — {', '.join(parts)}" if parts else "")
    description = _one_line(description, _DESCRIPTION_CHARS)

    sections = [
        f"# {_one_line(task_line, 80)}",
        f"Learned from session `{trajectory.session}`, turn {trajectory.turn}: "
        f"{triggers_summary(triggers) or 'a turn worth keeping'}.",
        f"## When to use\n{_one_line(task, 600)}",
    ]
    if steps:
        sections.append("## Steps\n" + "\n".join(steps))
    if pitfalls:
        sections.append("## Pitfalls\n" + "\n".join(pitfalls))
    if correction:
        lines = [f"- The user said: “{_one_line(trajectory.prompt, 300)}”"]
        if trajectory.previous_prompt and trajectory.previous_prompt != task:
            lines.append(
                f"- Before that they asked: “{_one_line(trajectory.previous_prompt, 200)}”"
            )
        sections.append("## User corrections\n" + "\n".join(lines))
    if trajectory.assistant:
        sections.append(f"## Outcome\n{_one_line(trajectory.assistant, 400)}")
    return Draft(name=name, description=description, body="\n\n".join(sections))


# --- the LLM draft --------------------------------------------------------------------------------

_DRAFT_PROMPT = f"""You turn one turn of a coding agent's work into a reusable skill for a \
skill catalogue (Claude Code's SKILL.md format). The catalogue shows only the name and \
description; the body is loaded when the skill is used.

Answer with one SKILL.md and nothing else:

---
name: <lowercase words joined by hyphens, at most {NAME_MAX} characters>
description: <one line: what the skill does and when to use it>
---
<Markdown body: when to use it, the steps that worked (exact commands and file paths \
in backticks), the pitfalls met and how they were fixed, any correction the user made>

Generalise the procedure so it applies next time, but keep commands, paths, flags and \
error names verbatim. Leave out anything the turn does not support. Never include \
secrets."""


def _transcript(trajectory: Trajectory) -> str:
    lines = [f"USER: {_one_line(trajectory.prompt, 2_000)}"]
    if trajectory.previous_prompt:
        lines.insert(0, f"(previous request) USER: {_one_line(trajectory.previous_prompt, 1_000)}")
    for event in trajectory.tools:
        status = "FAILED" if event.failed else "ok"
        line = f"TOOL {event.tool_name} `{_one_line(event.tool_input, 400)}` → {status}"
        if event.failed:
            line += f": {error_line(event.text)}"
        lines.append(line)
    if trajectory.assistant:
        lines.append(f"ASSISTANT: {_one_line(trajectory.assistant, 1_500)}")
    text = "\n".join(lines)
    if len(text) > _LLM_TRANSCRIPT_CHARS:
        half = _LLM_TRANSCRIPT_CHARS // 2
        text = f"{text[:half]}\n[…]\n{text[-half:]}"
    return text


def draft_llm(trajectory: Trajectory, triggers: Sequence[Trigger], *, config: LlmConfig) -> Draft:
    """A skill written by the configured LLM. Raises LlmError when its answer is unusable."""
    draft = draft_deterministic(trajectory, triggers)
    messages = [
        {"role": "system", "content": _DRAFT_PROMPT},
        {
            "role": "user",
            "content": (
                f"WHY THIS TURN: {triggers_summary(triggers)}\n\n"
                f"TURN:\n{_transcript(trajectory)}\n\n"
                "MECHANICAL DRAFT (improve it; keep its commands and paths verbatim):\n"
                f"---\nname: {draft.name}\ndescription: {draft.description}\n---\n{draft.body}"
            ),
        },
    ]
    answer = llm_complete(messages=messages, config=config, max_tokens=_LLM_MAX_TOKENS)
    return _draft_from_answer(answer, fallback_name=draft.name)


def _draft_from_answer(answer: str, *, fallback_name: str) -> Draft:
    text = re.sub(r"<think>.*?</think>", "", answer, flags=re.DOTALL | re.IGNORECASE).strip()
    fenced = re.fullmatch(r"```[\w-]*\n(.*)\n```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1).strip()
    try:
        parsed = skill_md_parse(text, fallback_name=fallback_name)
    except FolderError as exc:
        raise LlmError(f"the LLM's skill is not a SKILL.md: {exc}") from None
    name = parsed.name if name_valid(parsed.name) else slug_name(parsed.name)
    if not parsed.body:
        raise LlmError("the LLM's skill has an empty body")
    return Draft(
        name=name,
        description=_one_line(parsed.description, DESCRIPTION_MAX),
        body=parsed.body[:_BODY_MAX],
    )


def draft_build(
    trajectory: Trajectory, triggers: Sequence[Trigger], *, config: LlmConfig | None
) -> tuple[Draft, str]:
    """(draft, "llm" | "deterministic"): the LLM's when configured and usable."""
    if config is not None:
        try:
            return draft_llm(trajectory, triggers, config=config), "llm"
        except LlmError as exc:
            logger.warning("skill draft: LLM unavailable (%s); drafting deterministically", exc)
    return draft_deterministic(trajectory, triggers), "deterministic"


# --- merging bodies ------------------------------------------------------------------------------

_HEADING = re.compile(r"^##\s+(.+?)\s*#*\s*$")
_NUMBERED = re.compile(r"^(\s*)\d+[.)]\s+")


def _sections(body: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(lines before the first `##` heading, [(heading, lines)])."""
    preamble: list[str] = []
    sections: list[tuple[str, list[str]]] = []
    for line in body.strip().splitlines():
        match = _HEADING.match(line)
        if match:
            sections.append((match.group(1).strip(), []))
        elif sections:
            sections[-1][1].append(line.rstrip())
        else:
            preamble.append(line.rstrip())
    return preamble, sections


def _line_key(line: str) -> str:
    return " ".join(_NUMBERED.sub("", line).lstrip("-*• ").split()).lower()


def _renumber(lines: list[str]) -> list[str]:
    out, n = [], 0
    for line in lines:
        match = _NUMBERED.match(line)
        if match and not match.group(1):
            n += 1
            line = f"{n}. {line[match.end() :]}"
        elif line.strip() and not line.startswith((" ", "\t")):
            n = 0  # a paragraph between lists: the next list starts at 1
        out.append(line)
    return out


def _render_sections(preamble: list[str], sections: list[tuple[str, list[str]]]) -> str:
    parts = ["\n".join(preamble).strip()] if "\n".join(preamble).strip() else []
    for heading, lines in sections:
        text = "\n".join(lines).strip("\n")
        parts.append(f"## {heading}\n{text}".rstrip())
    return "\n\n".join(parts).strip()


def body_merge(existing: str, incoming: str) -> str:
    """`existing` with what `incoming` adds: new lines appended to the same-named
    section, new sections at the end. Nothing of `existing` is lost."""
    preamble, sections = _sections(existing)
    _, new_sections = _sections(incoming)
    by_heading = {heading.lower(): lines for heading, lines in sections}
    for heading, lines in new_sections:
        target = by_heading.get(heading.lower())
        if target is None:
            sections.append((heading, list(lines)))
            by_heading[heading.lower()] = sections[-1][1]
            continue
        seen = {_line_key(line) for line in target if line.strip()}
        additions = [line for line in lines if line.strip() and _line_key(line) not in seen]
        if additions:
            while target and not target[-1].strip():
                target.pop()
            target.extend(additions)
    sections = [(heading, _renumber(lines)) for heading, lines in sections]
    return _render_sections(preamble, sections)


# --- the optimizer --------------------------------------------------------------------------------

LESSONS_HEADING = "Lessons from use"
_LESSONS_MAX = 20


@dataclass(frozen=True)
class Feedback:
    outcome: str  # "success" | "failure" | "pending"
    text: str


def body_with_feedback(body: str, feedback: Sequence[Feedback]) -> str:
    """The body with the feedback folded into its "Lessons from use" section.

    Failures become pitfalls, successes what worked; a lesson already there is
    not repeated, and only the latest `_LESSONS_MAX` are kept.
    """
    preamble, sections = _sections(body)
    lessons = next((lines for heading, lines in sections if heading == LESSONS_HEADING), None)
    if lessons is None:
        sections.append((LESSONS_HEADING, []))
        lessons = sections[-1][1]
    seen = {_line_key(line) for line in lessons if line.strip()}
    for item in feedback:
        text = _one_line(item.text, 300)
        if not text:
            continue
        prefix = {"failure": "Pitfall", "success": "Worked"}.get(item.outcome, "Note")
        line = f"- {prefix}: {text}"
        if _line_key(line) not in seen:
            seen.add(_line_key(line))
            lessons.append(line)
    kept = [line for line in lessons if line.strip()][-_LESSONS_MAX:]
    lessons[:] = kept
    return _render_sections(preamble, sections)


_OPTIMIZE_PROMPT = """You maintain a skill for a coding agent (a Markdown body loaded when \
the skill is used). You get the current body and feedback from its latest uses. Rewrite \
the body so the next use goes better: fix steps that failed, add the pitfalls the \
feedback reports, keep what worked, and keep commands, paths and error names verbatim. \
Answer with the new Markdown body only: no front matter, no preamble."""


def body_optimize_llm(body: str, feedback: Sequence[Feedback], *, config: LlmConfig) -> str:
    lines = [f"- {item.outcome}: {_one_line(item.text, 600)}" for item in feedback if item.text]
    messages = [
        {"role": "system", "content": _OPTIMIZE_PROMPT},
        {"role": "user", "content": f"CURRENT BODY:\n{body}\n\nFEEDBACK:\n" + "\n".join(lines)},
    ]
    answer = llm_complete(messages=messages, config=config, max_tokens=_LLM_MAX_TOKENS)
    text = re.sub(r"<think>.*?</think>", "", answer, flags=re.DOTALL | re.IGNORECASE).strip()
    fenced = re.fullmatch(r"```[\w-]*\n(.*)\n```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1).strip()
    if text.startswith("---"):
        with contextlib.suppress(FolderError):  # not front matter after all: keep it all
            text = skill_md_parse(text, fallback_name="x").body
    if len(text.strip()) < 20:
        raise LlmError("the LLM's rewrite is empty")
    return text.strip()[:_BODY_MAX]


def body_optimize(
    body: str, feedback: Sequence[Feedback], *, config: LlmConfig | None
) -> tuple[str, str]:
    """(new body, "llm" | "deterministic")."""
    if config is not None:
        try:
            return body_optimize_llm(body, feedback, config=config), "llm"
        except LlmError as exc:
            logger.warning("skill optimizer: LLM unavailable (%s); folding feedback in", exc)
    return body_with_feedback(body, feedback), "deterministic"
