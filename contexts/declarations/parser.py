"""A small, safe parser for the YAML subset a directory declaration uses.

`.dsh/context.yaml` needs three keys: two lists of paths and a boolean. This
parser reads exactly that much YAML — a top-level mapping whose values are
plain or quoted scalars, one-line flow sequences (`[a, b]`) or block
sequences (`- a`) — and refuses everything else with the line it is on.
Anchors, aliases, tags, block scalars and nested collections are refused
outright, so there is nothing for a "billion laughs" document to expand, and
the source is capped in size before any parsing starts.

What it accepts parses to the same values as `yaml.safe_load` (the property
tests check this), except that a plain list item is always the path as
written: `- 2024` is the path "2024", not a number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_DECLARATION_BYTES = 64 * 1024

SYSTEM_PROMPT = "systemPrompt"
PRELOAD = "preload"
INHERIT = "inherit"

# YAML 1.1 booleans, as PyYAML's safe loader reads them.
_TRUE = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"}
_FALSE = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"}
_NULL = {"", "~", "null", "Null", "NULL"}

# Characters YAML does not allow in a document (c-printable's complement),
# plus U+0085, U+2028 and U+2029, which YAML 1.1 parsers read as line breaks
# and YAML 1.2 parsers do not: refusing them keeps every reader in agreement.
_NON_PRINTABLE = re.compile(
    "[^\t\n\r\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)
# Only spaces separate: tabs are allowed inside quotes and comments alone,
# as in PyYAML (YAML 1.2 is laxer, but then the two readers would differ).
_BLANK = " "
_TAB_MESSAGE = "a tab outside quotes; use spaces (or quote the value)"
# A plain scalar cannot start with one of these (`-`, `?` and `:` can when a
# non-space follows; that case is handled where it matters).
_INDICATORS = "[]{},#&*!|>'\"%@`"
_ESCAPES = {
    "0": "\0",
    "a": "\a",
    "b": "\b",
    "t": "\t",
    "\t": "\t",
    "n": "\n",
    "v": "\v",
    "f": "\f",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "/": "/",
    "\\": "\\",
    "N": "\x85",
    "_": "\xa0",
    "L": "\u2028",
    "P": "\u2029",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


class DeclarationError(ValueError):
    """A declaration that cannot be read, with the 1-based line at fault."""

    def __init__(self, message: str, *, line: int, path: str | None = None) -> None:
        self.message = message
        self.line = line
        self.path = path
        super().__init__(str(self))

    def __str__(self) -> str:
        return f"{self.path or 'declaration'}:{self.line}: {self.message}"

    def with_path(self, path: str) -> DeclarationError:
        return DeclarationError(self.message, line=self.line, path=path)


@dataclass(frozen=True)
class ParsedDeclaration:
    system_prompt: tuple[str, ...] = ()
    preload: tuple[str, ...] = ()
    inherit: bool = False
    # Keys this version does not know, with their line: ignored, but named in
    # the assembly's notes so a misspelt key does not pass silently.
    unknown_keys: tuple[tuple[str, int], ...] = ()


@dataclass
class _Scalar:
    value: str
    quoted: bool
    line: int


@dataclass
class _Entry:
    key: str
    line: int
    scalar: _Scalar | None = None  # an inline scalar value
    items: list[_Scalar] | None = None  # a flow or block sequence
    block: bool = False  # waiting for `- item` lines


def parse_declaration(text: str, *, path: str | None = None) -> ParsedDeclaration:
    """Parse a declaration, or raise `DeclarationError` naming the line."""
    try:
        return _interpret(_parse_mapping(text))
    except DeclarationError as exc:
        raise exc.with_path(path) if path else exc from None


def _parse_mapping(text: str) -> list[_Entry]:
    entries: list[_Entry] = []
    seen: dict[str, int] = {}
    key_indent: int | None = None
    item_indent: int | None = None
    started = False
    ended = False
    for number, line in enumerate(_lines(text), start=1):
        content, indent = _content(line, number)
        if not content or content.startswith("#"):
            continue
        if ended:
            raise DeclarationError("a declaration holds one YAML document", line=number)
        marker = _document_marker(content, number, started=started) if indent == 0 else None
        if marker is not None:
            started, ended = True, marker == "..."
            continue
        started = True
        current = entries[-1] if entries else None
        if content == "-" or content.startswith(("- ", "-\t")):
            item_indent = _add_item(current, content, number, indent, key_indent, item_indent)
            continue
        if key_indent is None:
            key_indent = indent
        if indent != key_indent:
            raise DeclarationError(
                "unexpected indentation (values spanning several lines are not supported)"
                if indent > key_indent
                else "this line is indented less than the keys above it",
                line=number,
            )
        if current is not None and current.block:
            current.block = False
            if not current.items:
                current.items = None  # `key:` with nothing under it is null
        item_indent = None
        entry = _mapping_line(content, number)
        if entry.key in seen:
            raise DeclarationError(
                f"the key {entry.key!r} appears twice (first on line {seen[entry.key]})",
                line=number,
            )
        seen[entry.key] = number
        entries.append(entry)
    if entries and entries[-1].block and not entries[-1].items:
        entries[-1].items = None
    return entries


def _lines(text: str) -> list[str]:
    """The declaration's lines, once it is known not to be too long; a BOM is dropped."""
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_DECLARATION_BYTES:
        raise DeclarationError(
            f"a declaration may have at most {MAX_DECLARATION_BYTES} bytes",
            line=raw[:MAX_DECLARATION_BYTES].count(b"\n") + 1,
        )
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _content(line: str, number: int) -> tuple[str, int]:
    """(the line after its indentation, the indentation), for a line YAML allows."""
    bad = _NON_PRINTABLE.search(line)
    if bad:
        raise DeclarationError(
            f"control character U+{ord(bad.group()):04X} is not allowed", line=number
        )
    content = line.lstrip(" ")
    if content[:1] == "\t":
        raise DeclarationError("tabs cannot indent YAML; use spaces", line=number)
    return content, len(line) - len(content)


def _document_marker(content: str, number: int, *, started: bool) -> str | None:
    """`---` or `...` when the unindented line is one (and may be there), else None."""
    if _is_marker(content, "---"):
        if started:
            raise DeclarationError("a declaration holds one YAML document", line=number)
        if content[3:].strip(_BLANK) and not content[3:].strip(_BLANK).startswith("#"):
            raise DeclarationError("nothing may follow '---' on its line", line=number)
        return "---"
    if _is_marker(content, "..."):
        if not started:
            raise DeclarationError("'...' ends a document that has not begun", line=number)
        _expect_end(content, 3, number)
        return "..."
    if content.startswith("%"):
        raise DeclarationError("YAML directives are not supported", line=number)
    return None


def _add_item(
    current: _Entry | None,
    content: str,
    number: int,
    indent: int,
    key_indent: int | None,
    item_indent: int | None,
) -> int:
    """Add a `- item` line to the key above it; the column its list's items start in."""
    if current is None or not current.block:
        raise DeclarationError("a list item must follow a 'key:' line", line=number)
    assert key_indent is not None
    if indent < key_indent:
        raise DeclarationError("this list item is indented less than its key", line=number)
    if item_indent is not None and indent != item_indent:
        raise DeclarationError("list items must all start in the same column", line=number)
    assert current.items is not None
    current.items.append(_block_item(content, number))
    return indent


def _is_marker(content: str, marker: str) -> bool:
    return content.startswith(marker) and (len(content) == 3 or content[3] in _BLANK)


def _expect_end(content: str, at: int, line: int) -> None:
    """Only blanks and a comment may follow position `at`."""
    rest = content[at:]
    stripped = rest.lstrip(_BLANK)
    if not stripped:
        return
    if stripped[0] == "\t":
        raise DeclarationError(_TAB_MESSAGE, line=line)
    if stripped.startswith("#") and len(stripped) < len(rest):
        return
    raise DeclarationError(f"unexpected text {stripped[:20]!r}", line=line)


def _mapping_line(content: str, line: int) -> _Entry:
    if content[0] in "\"'":
        key, end = _quoted(content, 0, line)
        rest = content[end:].lstrip(_BLANK)
        if not rest.startswith(":") or (len(rest) > 1 and rest[1] not in _BLANK):
            raise DeclarationError("expected ':' after the quoted key", line=line)
        value_at = len(content) - len(rest) + 1
    else:
        if content[0] in _INDICATORS or content.startswith(("? ", "?\t")) or content == "?":
            raise DeclarationError(
                "expected 'key: value' (anchors, tags, flow mappings and complex keys "
                "are not supported)",
                line=line,
            )
        colon = _mapping_colon(content)
        if colon is None:
            raise DeclarationError(
                "expected 'key: value' (a declaration is a mapping; put a space after ':')",
                line=line,
            )
        key = content[:colon].rstrip(_BLANK)
        value_at = colon + 1
        if not key:
            raise DeclarationError("a key is missing before ':'", line=line)
        _check_plain(key, line, flow=False)
    entry = _Entry(key=key, line=line)
    value = content[value_at:].lstrip(_BLANK)
    if not value or value.startswith("#"):
        entry.block = True
        entry.items = []
        return entry
    start = len(content) - len(value)
    if value[0] == "[":
        entry.items = _flow_sequence(content, start, line)
    elif value[0] == "{":
        raise DeclarationError("flow mappings ({...}) are not supported", line=line)
    elif value[0] in "|>":
        raise DeclarationError("block scalars (| and >) are not supported", line=line)
    elif value[0] in "&*!":
        raise DeclarationError("anchors, aliases and tags are not supported", line=line)
    elif value.startswith(("- ", "-\t")) or value == "-":
        raise DeclarationError("a list starts on the line after its key", line=line)
    else:
        entry.scalar = _scalar(content, start, line)
    return entry


def _mapping_colon(content: str) -> int | None:
    """Where a plain key ends: the first ':' followed by a blank or the end."""
    for index, char in enumerate(content):
        if char == "#" and index > 0 and content[index - 1] in _BLANK:
            return None
        if char == ":" and (index + 1 == len(content) or content[index + 1] in _BLANK):
            return index
    return None


def _block_item(content: str, line: int) -> _Scalar:
    value = content[1:].lstrip(_BLANK)
    if value.startswith("\t"):
        raise DeclarationError(_TAB_MESSAGE, line=line)
    if not value or value.startswith("#"):
        raise DeclarationError("an empty list item; write a path after '- '", line=line)
    start = len(content) - len(value)
    if value.startswith(("- ", "-\t")) or value == "-" or value[0] == "[":
        raise DeclarationError("nested lists are not supported", line=line)
    if value[0] == "{":
        raise DeclarationError("flow mappings ({...}) are not supported", line=line)
    if value[0] in "|>":
        raise DeclarationError("block scalars (| and >) are not supported", line=line)
    if value[0] in "&*!":
        raise DeclarationError("anchors, aliases and tags are not supported", line=line)
    item = _scalar(content, start, line)
    if not item.quoted and item.value in _NULL:
        raise DeclarationError("an empty list item; write a path after '- '", line=line)
    return item


def _scalar(content: str, start: int, line: int) -> _Scalar:
    """A quoted or plain scalar running to the end of the line (or a comment)."""
    if content[start] in "\"'":
        value, end = _quoted(content, start, line)
        _expect_end(content, end, line)
        return _Scalar(value, quoted=True, line=line)
    text = content[start:]
    comment = text.find(" #")
    if comment >= 0:
        text = text[:comment]
    text = text.rstrip(_BLANK)
    _check_plain(text, line, flow=False)
    if _mapping_colon(text) is not None:
        raise DeclarationError(
            "a value cannot hold ': ' unquoted (nested mappings are not supported)", line=line
        )
    return _Scalar(text, quoted=False, line=line)


def _check_plain(text: str, line: int, *, flow: bool) -> None:
    if "\t" in text:
        raise DeclarationError(_TAB_MESSAGE, line=line)
    if not text:
        return
    first = text[0]
    # In a flow list, PyYAML reads a leading '?' or ':' as an indicator always.
    if (
        first in _INDICATORS
        or (flow and first in "?:")
        or (
            first in "-?:"
            and (len(text) == 1 or text[1] in _BLANK or (flow and text[1] in ",[]{}"))
        )
    ):
        raise DeclarationError(
            f"{text[:20]!r} must be quoted (it starts with a YAML indicator)", line=line
        )


def _flow_sequence(content: str, start: int, line: int) -> list[_Scalar]:
    """`[a, "b", c]` on one line: items are scalars, a trailing comma is fine."""
    items: list[_Scalar] = []
    pos = start + 1
    expect_item = True
    while True:
        while pos < len(content) and content[pos] in _BLANK:
            pos += 1
        if pos >= len(content) or (content[pos] == "#" and content[pos - 1] in _BLANK):
            raise DeclarationError("a flow list ([...]) must close on the line it opens", line=line)
        char = content[pos]
        if char == "]":
            _expect_end(content, pos + 1, line)
            return items
        if char == ",":
            if expect_item:
                raise DeclarationError("an empty item in a flow list", line=line)
            expect_item = True
            pos += 1
            continue
        if not expect_item:
            raise DeclarationError("expected ',' or ']' in a flow list", line=line)
        if char in "[{":
            raise DeclarationError("nested collections are not supported", line=line)
        if char in "&*!|>":
            raise DeclarationError("anchors, aliases and tags are not supported", line=line)
        if char in "\"'":
            value, pos = _quoted(content, pos, line)
            items.append(_Scalar(value, quoted=True, line=line))
        else:
            end = pos
            while end < len(content) and content[end] not in ",[]":
                if content[end] in "{}":
                    raise DeclarationError(
                        "a path with braces (like ${device}) must be quoted inside [...] "
                        "— or use a '- path' list",
                        line=line,
                    )
                if content[end] == "#" and content[end - 1] in _BLANK:
                    break
                if content[end] == ":" and (
                    end + 1 == len(content) or content[end + 1] in _BLANK + ",[]{}"
                ):
                    raise DeclarationError(
                        "mappings inside a flow list are not supported", line=line
                    )
                end += 1
            text = content[pos:end].rstrip(_BLANK)
            _check_plain(text, line, flow=True)
            if text in _NULL:
                raise DeclarationError("an empty item in a flow list", line=line)
            items.append(_Scalar(text, quoted=False, line=line))
            pos = end
        expect_item = False


def _quoted(content: str, start: int, line: int) -> tuple[str, int]:
    """A single- or double-quoted scalar closing on this line; (value, end)."""
    quote = content[start]
    out: list[str] = []
    pos = start + 1
    while pos < len(content):
        char = content[pos]
        if quote == "'":
            if char == "'":
                if content[pos + 1 : pos + 2] == "'":
                    out.append("'")
                    pos += 2
                    continue
                return "".join(out), pos + 1
            out.append(char)
            pos += 1
            continue
        if char == '"':
            value = "".join(out)
            if "\x00" in value:  # YAML allows it; Postgres text cannot hold it
                raise DeclarationError("a quoted string may not hold NUL (\\0)", line=line)
            return value, pos + 1
        if char == "\\":
            pos += 1
            if pos >= len(content):
                break
            code = content[pos]
            if code in _ESCAPES:
                out.append(_ESCAPES[code])
                pos += 1
                continue
            if code in _HEX_ESCAPES:
                width = _HEX_ESCAPES[code]
                digits = content[pos + 1 : pos + 1 + width]
                if len(digits) != width or not all(c in "0123456789abcdefABCDEF" for c in digits):
                    raise DeclarationError(f"a bad \\{code} escape in a quoted string", line=line)
                point = int(digits, 16)
                if point > 0x10FFFF or 0xD800 <= point <= 0xDFFF:
                    raise DeclarationError(f"\\{code}{digits} is not a character", line=line)
                out.append(chr(point))
                pos += 1 + width
                continue
            raise DeclarationError(f"unknown escape \\{code} in a quoted string", line=line)
        out.append(char)
        pos += 1
    raise DeclarationError("a quoted string must close on the line it opens", line=line)


def _interpret(entries: list[_Entry]) -> ParsedDeclaration:
    system_prompt: tuple[str, ...] = ()
    preload: tuple[str, ...] = ()
    inherit = False
    unknown: list[tuple[str, int]] = []
    for entry in entries:
        if entry.key in (SYSTEM_PROMPT, PRELOAD):
            paths = _paths(entry)
            if entry.key == SYSTEM_PROMPT:
                system_prompt = paths
            else:
                preload = paths
        elif entry.key == INHERIT:
            inherit = _boolean(entry)
        else:
            unknown.append((entry.key, entry.line))
    return ParsedDeclaration(
        system_prompt=system_prompt,
        preload=preload,
        inherit=inherit,
        unknown_keys=tuple(unknown),
    )


def _paths(entry: _Entry) -> tuple[str, ...]:
    if entry.items is not None:
        return tuple(item.value for item in entry.items)
    if entry.scalar is None or (not entry.scalar.quoted and entry.scalar.value in _NULL):
        return ()
    # `preload: memory/status.md` means the one-item list: unambiguous, and
    # the mistake people make most.
    return (entry.scalar.value,)


def _boolean(entry: _Entry) -> bool:
    if entry.items is not None:
        raise DeclarationError(f"{entry.key} must be true or false, not a list", line=entry.line)
    if entry.scalar is None or (not entry.scalar.quoted and entry.scalar.value in _NULL):
        return False
    if not entry.scalar.quoted:
        if entry.scalar.value in _TRUE:
            return True
        if entry.scalar.value in _FALSE:
            return False
    raise DeclarationError(
        f"{entry.key} must be true or false, not {entry.scalar.value!r}", line=entry.line
    )
