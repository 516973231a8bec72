"""Refuse text that looks like a credential: memories are shown to models
and people, and a leaked key in a memory is a leaked key everywhere."""

from __future__ import annotations

import math
import re
from collections import Counter

# Vendor formats with fixed prefixes, each named for the error message.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("GitHub token", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}")),
    ("GitHub fine-grained token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}")),
    ("PyPI token", re.compile(r"\bpypi-AgEI[A-Za-z0-9_\-]{16,}")),
    ("Anthropic key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{16,}")),
    ("OpenAI project key", re.compile(r"\bsk-proj-[A-Za-z0-9_\-]{16,}")),
    ("OpenAI key", re.compile(r"\bsk-[A-Za-z0-9]{32,}")),
    ("AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----|-----BEGIN [A-Z ]+-----")),
    ("Slack token", re.compile(r"\bxox[bpoas]-[A-Za-z0-9\-]{10,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("memflow API key", re.compile(r"\bmf_[A-Za-z0-9_\-]{40,}")),
]

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
    for label, pattern in _PATTERNS:
        if pattern.search(text):
            return label
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
            return "credential assignment"
    return None
