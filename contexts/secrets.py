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
_ASSIGNMENT = re.compile(
    r"(?i)\b[\w.\-]*(?:api[_-]?key|secret|token|passw(?:or)?d|access[_-]?key|auth)[\w.\-]*"
    r"\s*[:=]\s*['\"]?([A-Za-z0-9+/=_\-.]{16,})"
)


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def find_secret(text: str) -> str | None:
    """The kind of credential the text seems to contain, or None."""
    for label, pattern in _PATTERNS:
        if pattern.search(text):
            return label
    for match in _ASSIGNMENT.finditer(text):
        value = match.group(1)
        has_mix = any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
        if has_mix and _entropy(value) >= 3.5:
            return "credential assignment"
    return None
