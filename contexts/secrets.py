"""Refuse text that looks like a credential: memories are shown to models
and people, and a leaked key in a memory is a leaked key everywhere.

What must be kept whatever it says (a session's event log: the harness's
hook JSON, kept whole) is kept with its credentials cut out instead
(`redact_secrets`, `redact_json`)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

# Vendor formats with fixed prefixes, each named for the error message:
# (name, how it starts, what follows).
_VENDOR_FORMATS = [
    ("GitHub token", "gh[pousr]_", r"[A-Za-z0-9]{20,}"),
    ("GitHub fine-grained token", "github_pat_", r"[A-Za-z0-9_]{20,}"),
    ("PyPI token", "pypi-", r"AgEI[A-Za-z0-9_\-]{16,}"),
    ("Anthropic key", "sk-ant-", r"[A-Za-z0-9_\-]{16,}"),
    ("OpenAI project key", "sk-proj-", r"[A-Za-z0-9_\-]{16,}"),
    ("OpenAI key", "sk-", r"[A-Za-z0-9]{32,}"),
    ("AWS access key id", "AKIA|ASIA", r"[0-9A-Z]{16}\b"),
    ("private key", "-----BEGIN ", r"[A-Z ]+-----"),  # any PEM block
    ("Slack token", "xox", r"[bpoas]-[A-Za-z0-9\-]{10,}"),
    ("Google API key", "AIza", r"[0-9A-Za-z_\-]{35}"),
    ("memflow API key", "mf_", r"[A-Za-z0-9_\-]{40,}"),
]
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (name, re.compile((r"\b" if start[0].isalnum() else "") + f"(?:{start}){rest}"))
    for name, start, rest in _VENDOR_FORMATS
]
# Where any of them can start: one scan for these finds the few places worth
# trying the patterns at (14 ms a MB, where each pattern's own scan took 30).
_STARTS = re.compile("|".join(start for _, start, _ in _VENDOR_FORMATS))

# A PEM block's header names it; its body runs to the matching footer.
_PEM_END = re.compile(r"-----END [A-Z ]+-----")

# `api_key = "…"`, `TOKEN: …`, `password=…` with a value that looks random.
# Possessive and split in two, so each name and value is read once: the one
# expression this replaces backtracked quadratically (minutes on 7 kB of
# `tokena.tokena.…`), stalling any write path that checks text.
_ASSIGNMENT = re.compile(r"(?<![\w.\-])([\w.\-]++)\s*+[:=]\s*+['\"]?")
_CREDENTIAL_NAME = re.compile(r"(?i)api[_-]?key|secret|token|passw(?:or)?d|access[_-]?key|auth")
_VALUE = re.compile(r"[A-Za-z0-9+/=_\-.]{16,}+")


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def find_secret(text: str) -> str | None:
    """The kind of credential the text seems to contain, or None."""
    for label, _ in _vendor_secrets(text):
        return label
    for _ in _assigned_secrets(text):
        return "credential assignment"
    return None


def _vendor_secrets(text: str) -> Iterator[tuple[str, re.Match[str]]]:
    """The credentials of a known vendor format in `text`, in order."""
    for start in _STARTS.finditer(text):
        for label, pattern in _PATTERNS:
            match = pattern.match(text, start.start())
            if match is not None:
                yield label, match
                break


def _assigned_secrets(text: str) -> Iterator[re.Match[str]]:
    """The values of `name = value` assignments that look like credentials."""
    if _CREDENTIAL_NAME.search(text) is None:
        return  # no name of one anywhere: nothing to walk
    at = 0
    while (match := _ASSIGNMENT.search(text, at)) is not None:
        at = match.end()
        if not _CREDENTIAL_NAME.search(match.group(1)):
            continue
        value = _VALUE.match(text, at)
        if value is None:
            continue
        at = value.end()
        found = value.group()
        has_mix = any(c.isdigit() for c in found) and any(c.isalpha() for c in found)
        if has_mix and _entropy(found) >= 3.5:
            yield value


def redact_secrets(text: str) -> str:
    """`text` with each credential `find_secret` would report replaced by `[redacted: kind]`.

    Everything else is kept as it was; text with no credential comes back
    unchanged. A PEM block goes from its header to its footer (or to the end
    of the text when it has none).
    """
    spans: list[tuple[int, int, str]] = []
    for label, match in _vendor_secrets(text):
        end = match.end()
        if label == "private key":
            footer = _PEM_END.search(text, end)
            end = footer.end() if footer else len(text)
        spans.append((match.start(), end, label))
    spans.extend((m.start(), m.end(), "credential assignment") for m in _assigned_secrets(text))
    if not spans:
        return text
    parts, at = [], 0
    for start, end, label in sorted(spans):
        if end <= at:
            continue  # inside one already cut out
        parts += [text[at : max(start, at)], f"[redacted: {label}]"]
        at = end
    parts.append(text[at:])
    return "".join(parts)


def redact_json(value: Any) -> Any:
    """A JSON value with every string in it passed through `redact_secrets` (keys kept)."""
    if isinstance(value, str):
        return redact_secrets(value)
    if isinstance(value, dict):
        return {key: redact_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_json(item) for item in value]
    return value
