"""What a tool call was: its kind, whether it only looked around, the line that says
why it failed."""

from __future__ import annotations

import re
from collections.abc import Sequence

from contexts.flowctx.notes.events import NoteEvent
from contexts.flowctx.notes.format import _one_line

_SHELL_TOOLS = {"bash", "shell", "sh", "exec", "execute", "run", "terminal", "command"} | {
    "run_command",
    "execute_command",
    "run_shell_command",
}
_EDIT_TOOLS = {"edit", "multiedit", "notebookedit", "edit_file", "apply_patch"} | {
    "str_replace",
    "str_replace_editor",
    "str_replace_based_edit_tool",
}
_WRITE_TOOLS = {"write", "write_file", "create_file"}
_READ_TOOLS = {"read", "read_file", "view", "view_file", "notebookread", "open_file"}
# Commands that only look around; they are exploration, not an approach.
_INSPECT_VERBS = (
    {"ls", "ll", "cat", "bat", "head", "tail", "less", "more", "grep", "egrep", "rg", "ag"}
    | {"find", "fd", "pwd", "echo", "printf", "wc", "which", "type", "tree", "file", "stat"}
    | {"du", "df", "env", "printenv", "awk", "sort", "uniq", "cut", "jq", "diff", "true", "cd"}
    | {"sleep", "date", "whoami", "git status", "git diff", "git log", "git show", "git branch"}
    | {"git blame", "git grep", "git rev-parse", "git remote"}
)


def tool_kind(event: NoteEvent) -> str:
    name = event.tool_name.lower()
    name = name.rsplit("__", 1)[-1]  # mcp__server__tool
    if name in _SHELL_TOOLS:
        return "shell"
    if name in _EDIT_TOOLS:
        return "edit"
    if name in _WRITE_TOOLS:
        return "write"
    if name in _READ_TOOLS:
        return "read"
    return "other"


def is_inspection(command: str) -> bool:
    segments = [s for s in re.split(r"&&|\|\||[;|\n]", command) if s.strip()]
    if not segments:
        return True
    for segment in segments:
        words = [w for w in segment.split() if not re.match(r"^\w+=", w)]
        while words and words[0] in ("sudo", "time", "command", "nohup"):
            words = words[1:]
        if not words:
            continue
        verb = words[0].rsplit("/", 1)[-1]
        if verb == "git" and len(words) > 1:
            verb = f"git {words[1]}"
        if verb == "sed" and not any(w.startswith("-i") for w in words[1:]):
            continue
        if verb not in _INSPECT_VERBS:
            return False
    return True


_EXCEPTION_LINE = re.compile(
    r"^(?:E\s+)?(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure)\b(?::.*)?$"
)
_ERRORISH = re.compile(
    r"\b(?:error|errors|exception|failed|failure|fatal|not found|no such|denied|cannot|"
    r"can't|could not|unable|invalid|refused|timed out|panic)\b",
    re.IGNORECASE,
)


def error_line(text: str) -> str:
    """The one line that says why a call failed."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:  # pytest's short summary names the test and the error
        if line.startswith(("FAILED ", "ERROR ")) and " - " in line:
            return _one_line(line, 160)
    exceptions = [line for line in lines if _EXCEPTION_LINE.match(line)]
    if exceptions:
        return _one_line(re.sub(r"^E\s+", "", exceptions[-1]), 160)
    for line in lines:
        if _ERRORISH.search(line) and not line.startswith("Traceback"):
            return _one_line(line, 160)
    return _one_line(lines[0], 160) if lines else ""


_SUMMARY_WORDS = re.compile(
    r"\b(?:passed|ok|success\w*|succeeded|done|built|installed|compiled|created|wrote|"
    r"written|finished|completed?|changed|insertions?|deletions?|updated|applied|migrated|"
    r"no issues|all checks passed)\b",
    re.IGNORECASE,
)


def _outcome_line(text: str) -> str:
    """The last line of a successful run, when it reads like a summary ("12 passed")."""
    lines = [line.strip(" =") for line in text.splitlines() if line.strip(" =")]
    if lines and len(lines[-1]) <= 120 and _SUMMARY_WORDS.search(lines[-1]):
        return _one_line(lines[-1], 100)
    return ""


# --- a failed call and the later call that fixed it (skills' trigger, session lessons) --


def fix_key(event: NoteEvent) -> tuple[str, str]:
    """What a later call must share with a failed one to count as its fix.

    Shell commands compare by program (`pytest`, `npm run build`), edits by
    file, other tools by name and input.
    """
    kind = tool_kind(event)
    if kind == "shell":
        return "shell", _program(event.tool_input)
    if kind in ("edit", "write"):
        return "file", event.tool_input
    return event.tool_name, event.tool_input


_PREFIXES = ("sudo", "time", "command", "nohup", "exec", "env")
_RUNNERS = {
    ("uv", "run"),
    ("poetry", "run"),
    ("pipenv", "run"),
    ("python", "-m"),
    ("python3", "-m"),
}
_TWO_WORD = {"npm", "pnpm", "yarn", "make", "git", "cargo", "go", "docker", "kubectl", "uv", "pip"}


def _program(command: str) -> str:
    segments = [s.strip() for s in re.split(r"&&|\|\||;|\n", command) if s.strip()]
    segments = [s for s in segments if not re.match(r"^cd\b", s)] or segments
    if not segments:
        return ""
    words = [w for w in segments[-1].split() if not re.match(r"^\w+=", w)]
    while words and words[0] in _PREFIXES:
        words = words[1:]
    while len(words) >= 2 and (words[0].rsplit("/", 1)[-1], words[1]) in _RUNNERS:
        words = words[2:]
    if not words:
        return ""
    program = words[0].rsplit("/", 1)[-1]
    if program in _TWO_WORD and len(words) > 1 and not words[1].startswith("-"):
        return f"{program} {words[1]}"
    return program


def fix_pairs(tools: Sequence[NoteEvent]) -> list[tuple[NoteEvent, NoteEvent | None]]:
    """Each failed call with the later successful call that fixed it (or None)."""
    pairs: list[tuple[NoteEvent, NoteEvent | None]] = []
    for index, event in enumerate(tools):
        if not event.failed:
            continue
        key = fix_key(event)
        fix = next(
            (later for later in tools[index + 1 :] if not later.failed and fix_key(later) == key),
            None,
        )
        pairs.append((event, fix))
    return pairs
