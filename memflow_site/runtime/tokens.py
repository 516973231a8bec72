"""How many tokens a text costs a model, estimated without a tokenizer.

The hook pipeline bounds what it injects with this, and flowctx decides what
to project and fold with it: one estimate, so their budgets agree.
"""

from __future__ import annotations

import re

# Han ideographs (with extension A and compatibility forms), CJK punctuation,
# kana, Hangul syllables and full-width forms: each usually costs a token or more.
_CJK = re.compile(
    "[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"
)
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_ASCII_RUNS = re.compile("[\x00-\x7f]+")


def estimate_tokens(text: str) -> float:
    """flowctx's estimate: CJK characters 1.5 tokens, astral ones (emoji…) 2, others 0.25."""
    if text.isascii():
        return len(text) * 0.25
    # Only non-ASCII characters can cost more than 0.25; setting them apart first is
    # one C pass, and the two counts then run over a few characters, not megabytes.
    rare = _ASCII_RUNS.sub("", text)
    cjk = len(_CJK.findall(rare))
    astral = len(_ASTRAL.findall(rare))
    return cjk * 1.5 + astral * 2.0 + (len(text) - cjk - astral) * 0.25
