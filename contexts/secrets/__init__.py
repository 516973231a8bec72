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

Masking (`mask_secrets`, `mask_json`) is the one rule for everything memflow
keeps or serves that it cannot refuse: stored originals, projections, session
logs. It says what it masked, so the caller can say the text is no longer the
original byte for byte.

Rules are tried only near their anchors: a few dozen scans for literal-led
patterns over the text, encoded one byte a character, find the places worth
trying them, and most of a megabyte of log is never looked at again. Each hit's rules
read a bounded stretch past it, and a run read once is not read again from
inside, so the cost is linear in the text; a budget per request (`budget.py`)
bounds what is left.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from contexts.secrets.budget import budget_ms, current, scan_budget
from contexts.secrets.finders import _pair_kind
from contexts.secrets.mask import UNSCANNED, WITHHELD, Masked, mask_within, spans_within
from contexts.secrets.rules import warm
from contexts.secrets.scan import Span

__all__ = [
    "UNSCANNED",
    "WITHHELD",
    "Masked",
    "budget_ms",
    "find_secret",
    "find_secret_in_json",
    "mask_json",
    "mask_secrets",
    "redact_json",
    "redact_secrets",
    "scan_budget",
]


def _spans(text: str) -> Iterator[Span]:
    """Every credential found in `text` (the bench's and the tests' view; no budget)."""
    yield from spans_within(text, float("inf")).spans


def find_secret(text: str) -> str | None:
    """The kind of credential the text seems to contain, or None.

    Text the budget left unscanned counts as one (`UNSCANNED`): it is not
    known to be clean.
    """
    warm()  # the rules, built once, outside any request's budget
    with current().spending() as until:
        found = spans_within(text, until, first_only=True)
    if found.spans:
        return found.spans[0][2]
    return UNSCANNED if found.scanned_to < len(text) else None


def find_secret_in_json(value: Any) -> str | None:
    """The kind of credential in any key or string of a JSON value, or None.

    A key naming a credential (`"password": "hunter2"`) makes its string
    value one, where the value alone would say nothing.
    """
    with scan_budget():
        return _find_in_json(value)


def _find_in_json(value: Any) -> str | None:
    if isinstance(value, str):
        return find_secret(value)
    if isinstance(value, dict):
        for key, item in value.items():
            name = str(key)
            found = find_secret(name) or (_pair_kind(name, item) if isinstance(item, str) else None)
            if found := found or _find_in_json(item):
                return found
        return None
    if isinstance(value, list | tuple):
        for item in value:
            if found := _find_in_json(item):
                return found
    return None


def mask_secrets(text: str) -> Masked:
    """`text` with each credential replaced by `[redacted: kind]`, and what was masked.

    Everything else is kept as it was. A PEM block goes from its header to its
    footer (or to the end of the text when it has none); a secret beside its
    id (an AWS key pair) goes with it. What the budget left unscanned is cut
    out too, and counted in `withheld`.
    """
    warm()
    with current().spending() as until:
        return mask_within(text, until)


def redact_secrets(text: str) -> str:
    """`mask_secrets(text).text`: the text as it may be kept."""
    return mask_secrets(text).text


def mask_json(value: Any) -> tuple[Any, Masked]:
    """A JSON value with every string in it masked (keys kept), and what was masked
    in all (its `text` is empty). The whole string under a key that names a
    credential (`"PGPASSWORD": "…"`) is cut out when it could be one.
    """
    kinds: list[str] = []
    withheld = [0]
    warm()
    budget = current()

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            if budget.spent and item:
                withheld[0] += len(item)
                return WITHHELD
            with budget.spending() as until:
                masked = mask_within(item, until)
            kinds.extend(masked.kinds)
            withheld[0] += masked.withheld
            return masked.text
        if isinstance(item, dict):
            out = {}
            for key, inner in item.items():
                kind = _pair_kind(str(key), inner) if isinstance(inner, str) else None
                if kind:
                    kinds.append(kind)
                out[key] = f"[redacted: {kind}]" if kind else walk(inner)
            return out
        if isinstance(item, list):
            return [walk(inner) for inner in item]
        return item

    result = walk(value)
    return result, Masked("", tuple(kinds), withheld[0])


def redact_json(value: Any) -> Any:
    """`mask_json(value)`'s value: the JSON as it may be kept."""
    return mask_json(value)[0]
