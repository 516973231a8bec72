"""Source code: an outline of definitions with their line numbers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from contexts.flowctx.projection.lines import _clip, _first_fitting, _padded

# Definitions are found by scanning for each keyword as a literal (ten times faster
# than one line-anchored pattern), then kept when only indentation and modifiers
# precede the keyword on its line.
_DEFINITION_KEYWORDS = tuple(
    re.compile(keyword + r"[ \t*]")
    for keyword in (
        *("def", "class", "function", "interface", "enum", "struct", "trait"),
        *("impl", "fn", "func", "module"),
    )
)
_DEFINITION_LEAD = re.compile(
    r"""([ \t]*)(?:(?:export|default|pub(?:\([\w\ ]+\))?|public|private|protected|static
        |abstract|final|async|unsafe|extern)[ \t]+)*""",
    re.X,
)
_DEFINITION_NAME = re.compile(r"[ \t*]*([\w$]+)")


@dataclass
class _Definition:
    line: int  # 1-based
    indent: str
    signature: str
    keyword: str
    name: str
    nested: list[_Definition] = field(default_factory=list)


def _definitions(text: str) -> list[_Definition]:
    """Top-level definitions, each with the definitions nested in it."""
    padded = _padded(text)
    found: dict[int, _Definition] = {}  # line start → its definition
    for scan in _DEFINITION_KEYWORDS:
        for match in scan.finditer(padded):
            line_start = padded.rfind("\n", 0, match.start()) + 1
            lead = _DEFINITION_LEAD.fullmatch(padded, line_start, match.start())
            name = _DEFINITION_NAME.match(padded, match.end() - 1)
            if lead is None or name is None or line_start in found:
                continue
            line_end = padded.find("\n", match.end())
            signature = padded[line_start + len(lead[1]) : line_end].rstrip()
            keyword = match.group()[:-1]
            found[line_start] = _Definition(0, lead[1], signature, keyword, name[1])
    top: list[_Definition] = []
    line, position = 0, 0
    for line_start in sorted(found):
        line += padded.count("\n", position, line_start)
        position = line_start
        definition = found[line_start]
        definition.line = line  # the padding's leading newline makes this 1-based
        if definition.indent and top:
            top[-1].nested.append(definition)
        else:
            top.append(definition)
    return top


def _project_code(text: str, *, limit: int, exit_code: int | None) -> str | None:
    """An outline: definitions with their line numbers, nested ones dropped first."""
    top = _definitions(text)
    if not top:
        return None
    total = text.count("\n") + 1
    nested = sum(len(d.nested) for d in top)
    header = f"outline of {total} lines: {len(top)} top-level definitions, {nested} nested"

    def full() -> Iterator[str]:
        yield header
        for definition in top:
            for one in (definition, *definition.nested):
                yield f"{one.line:>6}  {one.indent}{_clip(one.signature, 120)}"

    def nested_names() -> Iterator[str]:
        yield header
        for definition in top:
            yield f"{definition.line:>6}  {_clip(definition.signature, 120)}"
            if definition.nested:
                names = ", ".join(one.name for one in definition.nested)
                yield f"        {len(definition.nested)} nested: {_clip(names, 300)}"

    def names_only() -> Iterator[str]:
        yield header
        for definition in top:
            inside = f"  (+{len(definition.nested)} nested)" if definition.nested else ""
            yield f"{definition.line:>6}  {definition.keyword} {definition.name}{inside}"

    return _first_fitting([full, nested_names, names_only], limit)
