"""Import a mem0-style JSON export: `[{"id", "memory", "created_at", "metadata", …}]`.

mem0's `get_all()` answers `{"results": [...]}`; a bare list works too. The
text is `memory`; the creation time is kept; the item's `id`, `hash`, owner
ids (`user_id`, `agent_id`, `run_id`), `categories`, `updated_at` and its
`metadata` are kept under `metadata["mem0"]`. A `compartment` or `app` in the
item's metadata becomes memflow's compartment or app.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contexts.errors import Invalid
from contexts.models import Workspace
from memflow_site.porting.ledger import Incoming, remember_incoming
from memflow_site.porting.report import ImportReport, progress_bar
from memories import services

if TYPE_CHECKING:
    from django.contrib.auth.models import User

FORMAT = "mem0"
MAX_FILE_BYTES = 512 * 1024 * 1024
_KEPT = ("id", "hash", "user_id", "agent_id", "run_id", "actor_id", "role", "categories")


def _items(data: Any) -> list[Any]:
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        for key in ("results", "memories", "items"):
            if isinstance(data.get(key), list):
                return list(data[key])
    raise Invalid(
        'Not a mem0 export: expected a list of {"memory", …} objects (or {"results": [...]}).',
        code="unreadable_export",
    )


def _time(value: Any) -> dt.datetime | None:
    if value in (None, ""):
        return None
    if isinstance(value, int | float):
        return dt.datetime.fromtimestamp(value, tz=dt.UTC)
    parsed = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


def mem0_import(
    *,
    path: str | Path,
    workspace: Workspace,
    user: User | None = None,
    progress: bool = False,
) -> ImportReport:
    path = Path(path)
    report = ImportReport(format=FORMAT, source=str(path), workspace=workspace.slug)
    if path.stat().st_size > MAX_FILE_BYTES:
        raise Invalid(f"{path} is over 512 MB.", code="too_large")
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Invalid(f"{path} is not JSON: {exc}", code="unreadable_export") from None
    items = _items(data)
    incoming: list[Incoming] = []
    for index, raw in enumerate(items):
        label = f"mem0 item {index + 1}"
        if not isinstance(raw, dict):
            report.skip(label, f"not an object but {type(raw).__name__}")
            continue
        if raw.get("id"):
            label = f"mem0 {raw['id']}"
        text = raw.get("memory", raw.get("text"))
        if not isinstance(text, str):
            report.skip(label, "no `memory` text")
            continue
        try:
            created = _time(raw.get("created_at"))
        except (TypeError, ValueError, OverflowError, OSError):
            report.warn(label, f"created_at {raw.get('created_at')!r} is not a time; imported now")
            created = None
        metadata: dict[str, Any] = raw["metadata"] if isinstance(raw.get("metadata"), dict) else {}
        kept: dict[str, Any] = {k: raw[k] for k in _KEPT if raw.get(k) not in (None, "", [])}
        if raw.get("updated_at"):
            kept["updated_at"] = raw["updated_at"]
        if metadata:
            kept["metadata"] = metadata
        source_id = (
            str(raw.get("id") or "")
            or hashlib.sha256(
                f"{text}\x00{raw.get('created_at')}".encode("utf-8", "surrogatepass")
            ).hexdigest()[:24]
        )
        incoming.append(
            Incoming(
                key=f"{FORMAT}:{source_id}",
                label=label,
                item=services.RememberInput(
                    text=text,
                    compartment=str(metadata.get("compartment") or ""),
                    app=str(metadata.get("app") or ""),
                    source="import",
                    metadata={"mem0": kept},
                    created_at=created,
                ),
            )
        )
    # In time order, so state-like updates and folds happen as they did.
    incoming.sort(key=lambda inc: inc.item.created_at or dt.datetime.max.replace(tzinfo=dt.UTC))
    with progress_bar(enabled=progress, label="mem0", total=len(incoming)) as bar:
        remember_incoming(
            workspace=workspace, user=user, fmt=FORMAT, incoming=incoming, report=report, bar=bar
        )
    return report
