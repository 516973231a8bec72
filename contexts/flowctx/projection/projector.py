"""Choosing a projector for a tool result and holding it to the budget."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contexts.flowctx.projection.cli import _project_cli
from contexts.flowctx.projection.code import _project_code
from contexts.flowctx.projection.detect import _detect
from contexts.flowctx.projection.diff import _project_diff
from contexts.flowctx.projection.json_value import _project_json
from contexts.flowctx.projection.lines import _HARD_CAP, _head_tail
from contexts.flowctx.projection.log import _project_log
from contexts.flowctx.projection.prose import _project_text
from contexts.flowctx.projection.search import _project_search
from contexts.flowctx.projection.testrun import _project_test
from memflow_site.runtime.tokens import estimate_tokens

logger = logging.getLogger(__name__)

KINDS = ("json", "diff", "code", "log", "search", "test", "cli", "text")


@dataclass(frozen=True)
class Projection:
    kind: str  # one of KINDS: the projector that produced `text`
    text: str  # the projected body, without the retrieval marker
    original_chars: int
    projected_chars: int


def detect_kind(text: str, *, tool_name: str | None = None) -> str:
    """What the text is: one of KINDS ("text" when nothing more specific fits)."""
    return _detect(text, tool_name=tool_name)[0]


def project(
    text: str,
    *,
    budget_tokens: int = 1000,
    tool_name: str | None = None,
    exit_code: int | None = None,
) -> Projection | None:
    """The projection of a tool result over `budget_tokens`, or None to keep it as it is.

    None when the text is within budget, or when the projection would not be
    shorter (it is then abandoned: a longer "summary" only costs tokens).
    """
    tokens = estimate_tokens(text)
    if tokens <= budget_tokens or not text:
        return None
    # The projectors count characters; the text's own token density converts the
    # budget, so CJK output gets fewer characters than ASCII output.
    limit = max(int(budget_tokens * len(text) / tokens), _MIN_LIMIT)
    kind, parsed = _detect(text, tool_name=tool_name)
    body = _structured(kind, text, limit=limit, exit_code=exit_code, parsed=parsed)
    if body is None:
        kind, body = "text", _head_tail(text, limit)
    elif len(body) > limit * _HARD_CAP:
        # Must-keep lines alone can pass the budget (a log where every line is an
        # error); past a few budgets the structured view is cut like plain text,
        # as the original is one retrieve away.
        body = _head_tail(body, limit * _HARD_CAP)
    if len(body) >= len(text):
        return None
    return Projection(kind=kind, text=body, original_chars=len(text), projected_chars=len(body))


_MIN_LIMIT = 64


def _structured(
    kind: str, text: str, *, limit: int, exit_code: int | None, parsed: Any
) -> str | None:
    """The projector's output, or None when structure does not help."""
    try:
        if kind == "json":
            return _project_json(parsed, limit=limit)
        return _PROJECTORS[kind](text, limit=limit, exit_code=exit_code)
    except Exception:
        # A projector bug must cost the structure, never the agent's tool call:
        # this runs inside `tools/post-execute`. Logged, so a test can catch it.
        logger.exception("flowctx projection failed for a %s result", kind)
        return None


_PROJECTORS: dict[str, Callable[..., str | None]] = {
    "text": _project_text,
    "diff": _project_diff,
    "code": _project_code,
    "log": _project_log,
    "search": _project_search,
    "test": _project_test,
    "cli": _project_cli,
}
