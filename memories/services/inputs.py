"""What remember takes and gives back, and the checks every stored text passes."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from contexts.errors import Invalid, MemflowError
from contexts.knobs import knob
from contexts.models import Workspace
from contexts.secrets import find_secret, find_secret_in_json
from memories.models import DedupeEvent, Memory

if TYPE_CHECKING:
    pass


class SecretDetected(MemflowError):
    status_code = 422
    code = "secret_detected"


class TextTooLong(MemflowError):
    status_code = 413
    code = "text_too_long"


@dataclass
class RememberInput:
    text: str
    compartment: str = ""
    state_key: str = ""
    state_value: str = ""
    source: str = Memory.Source.MODEL
    app: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime | None = None  # importers keep the original time


Outcome = Literal["created", "strengthened", "merged"]


@dataclass
class RememberResult:
    outcome: Outcome
    memory: Memory
    superseded: list[int] = field(default_factory=list)
    event: DedupeEvent | None = None
    similarity: float | None = None


def memory_validate(*, workspace: Workspace, item: RememberInput) -> RememberInput:
    """A cleaned copy of `item`, or the error that refuses it. Stores nothing."""
    text = item.text.strip() if isinstance(item.text, str) else ""
    if not text:
        raise Invalid("A memory needs some text.", code="empty_text")
    if "\x00" in text:
        raise Invalid("Memory text cannot contain NUL characters.", code="invalid_text")
    limit = int(knob(workspace, "max_text_chars"))
    if len(text) > limit:
        raise TextTooLong(
            f"The text has {len(text)} characters; this workspace takes at most {limit}."
        )
    # Every field that is stored and shown again: the metadata's keys and strings too.
    for value in (text, item.state_value, item.state_key, item.app, item.compartment):
        label = find_secret(value)
        if label:
            raise SecretDetected(f"The text looks like it contains a {label}; it was not stored.")
    label = find_secret_in_json(item.metadata or {})
    if label:
        raise SecretDetected(f"The metadata looks like it contains a {label}; it was not stored.")
    if item.source not in Memory.Source.values:
        raise Invalid(f"Unknown source {item.source!r}.", code="invalid_source")
    if item.state_value and not item.state_key:
        raise Invalid("A state_value needs a state_key.", code="state_key_required")
    compartment = item.compartment.strip().lower()
    if len(compartment) > 64 or len(item.state_key) > 200 or len(item.app) > 64:
        raise Invalid(
            "compartment and app take 64 characters, state_key 200.", code="field_too_long"
        )
    return RememberInput(
        text=text,
        compartment=compartment,
        state_key=item.state_key.strip(),
        state_value=item.state_value.strip(),
        source=item.source,
        app=item.app.strip(),
        metadata=item.metadata or {},
        created_at=item.created_at,
    )
