"""A prompt longer than the workspace keeps as one memory: a pasted log or stack trace.

Refusing it (the workspace's `max_text_chars`) lost what the person pasted
without a word. Instead the whole text is stored as an original (flowctx's
store, under its SHA-256, pinned so it outlives the tool-output expiry), and
the memory holds its opening and its end — where a trace names its error —
with the ref that fetches the rest. Recall finds it by those words, its
embedding is of that excerpt (a model reads a few hundred tokens of a text
at most, so the excerpt is what it would read anyway, plus the end), and
`flowctx_retrieve` or `/compression/<sha>/` gives back every byte.
"""

from __future__ import annotations

from typing import Any

from contexts.flowctx import services as flowctx
from contexts.models import AgentSession, Workspace
from contexts.tenancy.knobs import knob

NO_PROJECTION = 10**9
# Of the excerpt's room, the share given to the end of the text.
TAIL_SHARE = 0.25
ELISION = "\n[… {skipped:,} characters; the whole prompt is stored as ref {sha} …]\n"


def prompt_kept_whole(
    *, workspace: Workspace, prompt: str, session: AgentSession | None
) -> tuple[str, dict[str, Any]] | None:
    """(the memory's text, its metadata) for a prompt past `max_text_chars`; None when it fits."""
    limit = int(knob(workspace, "max_text_chars"))
    if len(prompt) <= limit:
        return None
    stored = flowctx.compression_store(
        workspace=workspace,
        content=prompt.encode(),
        content_type="text/plain; charset=utf-8",
        tool_name="user-prompt",
        session=session,
        # No projection: the memory holds its own excerpt, and projecting a
        # pasted log costs the prompt's hook time it does not have.
        budget_tokens=NO_PROJECTION,
    )
    flowctx.compression_pin(ref=stored.ref, pinned=True)
    sha = stored.ref.sha256
    room = max(0, limit - len(ELISION.format(skipped=len(prompt), sha=sha)))
    tail = int(room * TAIL_SHARE)
    head = room - tail
    elided = ELISION.format(skipped=len(prompt) - head - tail, sha=sha)
    text = prompt[:head] + elided + prompt[len(prompt) - tail :]
    return text, {"whole_prompt": {"sha256": sha, "chars": len(prompt)}}
