"""Identifiers and file paths found in a session, ranked: the KEY IDENTIFIERS and
FILE ARTIFACTS sections."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from contexts.flowctx.notes.events import NoteEvent
from contexts.flowctx.notes.format import _LINE_CHARS, _SECTION_LINES
from contexts.flowctx.notes.tools import _EXCEPTION_LINE, error_line, tool_kind

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
_UUID = re.compile(
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
)
_HASH = re.compile(r"(?<![\w-])[0-9a-f]{7,40}(?![\w-])")
_SESSION_ID = re.compile(
    r"\bsession[ _-]?id\b[\"'`]?\s*[:=]?\s*[\"'`]?([A-Za-z0-9][\w.:-]{2,80})", re.IGNORECASE
)
_PREFIXED_ID = re.compile(
    r"\b(?:sess|ses|session|run|req|msg|toolu|call|chatcmpl|job|trace|conv|thread)[-_]"
    r"[A-Za-z0-9][\w-]{5,80}\b"
)
_NODE_ID = re.compile(r"(?<![\w/.-])(?:[\w.-]+/)*[\w.-]+\.py::[^\s'\"`;,()]+")
_ERROR_NAME = re.compile(
    r"\b(?:[a-z_][a-z0-9_]*\.)*[A-Z][A-Za-z0-9]*(?:Error|Exception|Exit|Interrupt|Warning)\b"
)
_SCOPED = re.compile(r"\b[A-Za-z_]\w*(?:::[A-Za-z_]\w*)+\b")
_DOTTED_CALL = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\)|(?=\())")
_BARE_CALL = re.compile(r"\b[A-Za-z_]\w*\(\)")
_SNAKE = re.compile(r"\b_{0,2}[a-z][a-z0-9]*(?:_[a-z0-9]+)+_{0,2}\b")
_UPPER_SNAKE = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
_CAMEL = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b")
_LOWER_CAMEL = re.compile(r"\b[a-z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b")
_TRACEBACK_FILE = re.compile(r"File \"([^\"]+)\", line (\d+)")
_EXTENSIONS = (
    "py|pyi|js|jsx|ts|tsx|mjs|cjs|json|jsonl|yaml|yml|toml|ini|cfg|conf|md|rst|txt|html|"
    "css|scss|sql|sh|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|lock|xml|csv|ipynb|vue|"
    "svelte|proto|tf|env|log|patch|diff"
)
_PATH = re.compile(
    r"(?<![\w.~/@-])("
    r"(?:~|\.{1,2})/(?:[\w.@+-]+/)*[\w.@+-]+"  # ./x, ~/x
    r"|/(?:[\w.@+-]+/)+[\w.@+-]+"  # /abs/path (one segment would catch "/compact")
    r"|(?:[\w.@+-]+/)+[\w@+-][\w.@+-]*\.[A-Za-z][A-Za-z0-9]{0,7}"  # dir/file.ext
    rf"|[\w@+-][\w.@+-]*\.(?:{_EXTENSIONS})"  # file.ext
    r")(?::(\d+))?(?![\w/])"
)
_NOISE_PATHS = re.compile(
    r"site-packages|dist-packages|node_modules|/\.venv/|^\.venv/|/venv/|__pycache__|/\.git/|"
    r"^/(?:usr|bin|sbin|lib|lib64|proc|sys|dev)(?:/|$)|<frozen"
)

# Per kind of identifier: how many a note keeps, in the order they are listed.
_IDENTIFIER_KINDS = (("ids", 8), ("commits", 8), ("tests", 6), ("errors", 8), ("symbols", 24))
_FILE_ACTIONS = ("created", "edited", "read", "mentioned")


@dataclass
class _FileSeen:
    rank: int
    first: int
    actions: set[str] = field(default_factory=set)
    lines: list[str] = field(default_factory=list)


@dataclass
class _Found:
    """Identifiers and paths seen so far, each with its best rank and first sighting."""

    identifiers: dict[str, dict[str, tuple[int, int]]] = field(
        default_factory=lambda: {kind: {} for kind, _ in _IDENTIFIER_KINDS}
    )
    files: dict[str, _FileSeen] = field(default_factory=dict)
    counter: int = 0

    def _add_identifier(self, kind: str, token: str, rank: int) -> None:
        token = token.strip().rstrip(".:")
        if len(token) < 3 or len(token) > 120:
            return
        for other, listed in self.identifiers.items():
            if other != kind and token in listed:
                return  # one token, one kind: a session id is not also a symbol
        bucket = self.identifiers[kind]
        self.counter += 1
        if token in bucket:
            bucket[token] = (min(bucket[token][0], rank), bucket[token][1])
        else:
            bucket[token] = (rank, self.counter)

    def add_file(self, path: str, *, rank: int, action: str, line: str | None = None) -> None:
        path = path.rstrip(".,:;)'\"`")
        if not path or len(path) > 200 or _NOISE_PATHS.search(path) or path in ("/", ".", ".."):
            return
        self.counter += 1
        seen = self.files.setdefault(path, _FileSeen(rank=rank, first=self.counter))
        seen.rank = min(seen.rank, rank)
        seen.actions.add(action)
        if line and line not in seen.lines and len(seen.lines) < 3:
            seen.lines.append(line)

    def scan(self, text: str, *, rank: int, weak: bool, hashes: bool = True) -> None:
        """Take identifiers and paths from `text`. Strong patterns (ids, test ids,
        error names, and commit hashes unless `hashes` is off) apply to all text;
        `weak` adds the name-shaped ones, which in a file's content or a long log
        would catch every variable."""
        text = _URL.sub(" ", text)
        for match in _TRACEBACK_FILE.finditer(text):
            self.add_file(match.group(1), rank=rank + 1, action="mentioned", line=match.group(2))
        for match in _NODE_ID.finditer(text):
            self._add_identifier("tests", match.group(0).rstrip(".:"), rank)
            self.add_file(match.group(0).split("::", 1)[0], rank=rank + 1, action="mentioned")
        text = _NODE_ID.sub(" ", text)
        for match in _PATH.finditer(text):
            self.add_file(match.group(1), rank=rank + 1, action="mentioned", line=match.group(2))
        text = _PATH.sub(" ", text)
        for match in _UUID.finditer(text):
            self._add_identifier("ids", match.group(0), rank)
        text = _UUID.sub(" ", text)
        for match in _SESSION_ID.finditer(text):
            if re.search(r"\d", match.group(1)):
                self._add_identifier("ids", match.group(1), rank)
        for match in _PREFIXED_ID.finditer(text):
            if re.search(r"\d", match.group(0)):
                self._add_identifier("ids", match.group(0), rank)
        for match in _HASH.finditer(text) if hashes else ():
            token = match.group(0)
            if re.search(r"\d", token) and re.search(r"[a-f]", token):
                self._add_identifier("commits", token, rank)
        for match in _ERROR_NAME.finditer(text):
            self._add_identifier("errors", match.group(0), rank)
        if not weak:
            return
        text = _ERROR_NAME.sub(" ", text)
        for pattern in (_SCOPED, _DOTTED_CALL, _BARE_CALL):
            for match in pattern.finditer(text):
                self._add_identifier("symbols", match.group(0), rank)
            text = pattern.sub(" ", text)
        for pattern in (_SNAKE, _UPPER_SNAKE, _CAMEL, _LOWER_CAMEL):
            for match in pattern.finditer(text):
                self._add_identifier("symbols", match.group(0), rank)

    def identifier_lines(self) -> list[str]:
        lines = []
        for kind, limit in _IDENTIFIER_KINDS:
            bucket = self.identifiers[kind]
            tokens: list[str] = []
            for token in sorted(bucket, key=lambda t: bucket[t]):
                if len(tokens) == limit:
                    break
                # `9c1e4b7` from git log and `9c1e4b7a2f` from the user are one
                # commit; the better-ranked spelling is kept.
                if kind == "commits" and any(
                    t.startswith(token) or token.startswith(t) for t in tokens
                ):
                    continue
                tokens.append(token)
            line = f"- {kind}:"
            for token in tokens:
                piece = f" `{token}`"
                if len(line) + len(piece) + 1 > _LINE_CHARS and not line.endswith(":"):
                    lines.append(line.rstrip(","))
                    line = f"- {kind}:"
                line += piece + ","
            if not line.endswith(":"):
                lines.append(line.rstrip(","))
        return lines

    def file_lines(self) -> list[str]:
        files = dict(self.files)
        # `importer/x.py` in a traceback is `/work/app/importer/x.py` from Read:
        # a relative path that ends an absolute one joins it.
        for path in list(files):
            if path.startswith(("/", "~")):
                continue
            whole = sorted(p for p in files if p.startswith(("/", "~")) and p.endswith("/" + path))
            if whole:
                seen, into = files.pop(path), files[whole[0]]
                into.rank, into.first = min(into.rank, seen.rank), min(into.first, seen.first)
                into.actions |= seen.actions
                into.lines = (into.lines + [n for n in seen.lines if n not in into.lines])[:3]
        ranked = sorted(files.items(), key=lambda kv: (kv[1].rank, kv[1].first))
        lines = [_file_line(path, seen.actions, seen.lines) for path, seen in ranked]
        if len(lines) > _SECTION_LINES:
            rest = len(lines) - (_SECTION_LINES - 1)
            lines = [*lines[: _SECTION_LINES - 1], f"- … and {rest} more files"]
        return lines


def _file_line(path: str, actions: Iterable[str], lines: Sequence[str]) -> str:
    chosen = [a for a in _FILE_ACTIONS if a in set(actions)]
    if len(chosen) > 1:
        chosen = [a for a in chosen if a != "mentioned"]
    line = f"- `{path}` — {', '.join(chosen or ['mentioned'])}"
    numbers = sorted(set(lines), key=int)
    if numbers:
        line += f"; line {numbers[0]}" if len(numbers) == 1 else f"; lines {', '.join(numbers)}"
    return line


def _scan_session(session: Sequence[NoteEvent], found: _Found) -> None:
    for event in session:
        if event.kind == "prompt":
            found.scan(event.text, rank=0, weak=True)
        elif event.kind == "assistant":
            found.scan(event.text, rank=2, weak=True)
        elif event.kind == "tool":
            kind = tool_kind(event)
            if kind in ("edit", "write", "read") and re.fullmatch(r"\S{1,200}", event.tool_input):
                action = {"edit": "edited", "write": "created", "read": "read"}[kind]
                if event.failed:
                    action = "mentioned"
                found.add_file(event.tool_input, rank=0 if kind != "read" else 1, action=action)
            else:
                # `cd /work/app` says where, not what: the directory is no artifact.
                command = re.sub(r"(?:^|(?<=[;&|]))\s*cd\s+\S+", " ", event.tool_input)
                found.scan(command, rank=1, weak=True)
            if event.failed:
                error_lines = [
                    line
                    for line in event.text.splitlines()
                    if _EXCEPTION_LINE.match(line.strip()) or line.strip().startswith('File "')
                ]
                found.scan("\n".join([error_line(event.text), *error_lines]), rank=1, weak=True)
            # Logs are full of hex (addresses, digests, request ids); only git's
            # output is trusted to hold commit hashes.
            git = tool_kind(event) == "shell" and re.search(r"\bgit\b", event.tool_input)
            found.scan(event.text, rank=3, weak=False, hashes=bool(git))
