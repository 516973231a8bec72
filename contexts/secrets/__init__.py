"""Refuse text that looks like a credential: memories are shown to models
and people, and a leaked key in a memory is a leaked key everywhere.

What must be kept whatever it says (a session's event log: the harness's
hook JSON, kept whole) is kept with its credentials cut out instead
(`redact_secrets`, `redact_json`).

The rules are detect-secrets' (Yelp): its plugins' regexes for vendor keys,
JWTs, URLs with a password, private keys and `password = …` keywords, with
its false-positive heuristics, used in memory through its Python classes.
memflow adds the vendor formats those miss (its own `mf_` keys, Anthropic,
GitHub fine-grained, Google), URLs whose password has `!&$…`, `Authorization`
headers, passwords told in a sentence, and JSON keys that name a credential.

Rules are tried only near their anchors: a few dozen scans for literal-led
patterns over the text, encoded one byte a character, find the places worth
trying them, and most of a megabyte of log is never looked at again.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from contexts.secrets.finders import _pair_kind
from contexts.secrets.rules import _PEM_END, _any_anchor, _groups
from contexts.secrets.scan import Span, _Scan

# Below this, asking every anchor first costs less than it saves.
_SHORT = 4096


def _spans(text: str) -> Iterator[Span]:
    """Every credential found in `text`, rule group by rule group."""
    scan = _Scan(text)
    if len(text) < _SHORT and not _any_anchor(scan):
        return
    for group in _groups():
        for start, end, hits in scan.windows(group):
            for finder in group.finders:
                yield from finder(scan, start, end, hits)


def find_secret(text: str) -> str | None:
    """The kind of credential the text seems to contain, or None."""
    for _, _, kind in _spans(text):
        return kind
    return None


def find_secret_in_json(value: Any) -> str | None:
    """The kind of credential in any key or string of a JSON value, or None.

    A key naming a credential (`"password": "hunter2"`) makes its string
    value one, where the value alone would say nothing.
    """
    if isinstance(value, str):
        return find_secret(value)
    if isinstance(value, dict):
        for key, item in value.items():
            name = str(key)
            found = find_secret(name) or (_pair_kind(name, item) if isinstance(item, str) else None)
            if found := found or find_secret_in_json(item):
                return found
        return None
    if isinstance(value, list | tuple):
        for item in value:
            if found := find_secret_in_json(item):
                return found
    return None


def redact_secrets(text: str) -> str:
    """`text` with each credential `find_secret` would report replaced by `[redacted: kind]`.

    Everything else is kept as it was; text with no credential comes back
    unchanged. A PEM block goes from its header to its footer (or to the end
    of the text when it has none).
    """
    spans: list[Span] = []
    for start, end, kind in _spans(text):
        if kind == "private key":
            while start > 0 and text[start - 1] == "-":
                start -= 1  # detect-secrets' patterns start at BEGIN
            footer = _PEM_END.search(text, end)
            end = footer.end() if footer else len(text)
        spans.append((start, end, kind))
    if not spans:
        return text
    parts, at = [], 0
    for start, end, kind in sorted(spans):
        if end <= at:
            continue  # inside one already cut out
        parts += [text[at : max(start, at)], f"[redacted: {kind}]"]
        at = end
    parts.append(text[at:])
    return "".join(parts)


def redact_json(value: Any) -> Any:
    """A JSON value with every string in it passed through `redact_secrets` (keys kept).

    The whole string under a key that names a credential (`"PGPASSWORD": "…"`)
    is cut out when it could be one.
    """
    if isinstance(value, str):
        return redact_secrets(value)
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            kind = _pair_kind(str(key), item) if isinstance(item, str) else None
            out[key] = f"[redacted: {kind}]" if kind else redact_json(item)
        return out
    if isinstance(value, list):
        return [redact_json(item) for item in value]
    return value
