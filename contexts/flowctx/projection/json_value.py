"""JSON: every top-level key, nested values shown as deep as the budget allows."""

from __future__ import annotations

import json
from dataclasses import dataclass
from itertools import islice
from typing import Any

from contexts.flowctx.projection.lines import _HARD_CAP, _clip, _Full

_LONG_ARRAY = 20  # from this many items an array is summarised, not listed


@dataclass(frozen=True)
class _Shape:
    """How much of a JSON value a rendering shows."""

    depth: int  # nesting shown before values become `{…n keys}` / `[…n items]`
    items: int  # leading items shown from a long array (its last item is shown too)
    keys: int  # keys shown from a nested object (top-level keys are always all shown)
    chars: int  # longest string shown whole; short values stay representative


_SHAPES = (
    _Shape(depth=6, items=12, keys=24, chars=200),
    _Shape(depth=6, items=3, keys=24, chars=200),
    _Shape(depth=4, items=2, keys=12, chars=100),
    _Shape(depth=3, items=1, keys=8, chars=60),
    _Shape(depth=2, items=1, keys=6, chars=60),
    _Shape(depth=1, items=1, keys=4, chars=60),
)


class _Meter:
    """Counts rendered characters and stops a rendering that passes its limit."""

    def __init__(self, limit: int | None) -> None:
        self.left = limit

    def spend(self, text: str) -> str:
        if self.left is not None:
            self.left -= len(text) + 2  # +2: the comma and space around it
            if self.left < 0:
                raise _Full
        return text


def _project_json(value: Any, *, limit: int) -> str | None:
    for shape in _SHAPES:
        try:
            return _json_top(value, shape, _Meter(limit))
        except _Full:
            continue
    try:
        return _json_top(value, _SHAPES[-1], _Meter(limit * _HARD_CAP))
    except _Full:
        return None  # thousands of top-level keys: plain head/tail is all that fits


def _json_top(value: Any, shape: _Shape, meter: _Meter) -> str:
    """One top-level entry per line; every top-level key is kept."""
    if isinstance(value, dict):
        entries = [
            f"  {meter.spend(_json_key(key))}: {_json_value(item, shape, meter, 1)}"
            for key, item in value.items()
        ]
        return "{\n" + ",\n".join(entries) + "\n}"
    if isinstance(value, list):
        return (
            "[\n" + ",\n".join(f"  {item}" for item in _json_items(value, shape, meter, 1)) + "\n]"
        )
    return _json_value(value, shape, meter, 0)


def _json_value(value: Any, shape: _Shape, meter: _Meter, depth: int) -> str:
    if isinstance(value, dict):
        if not value:
            return "{}"
        if depth >= shape.depth:
            return meter.spend(f"{{…{len(value)} keys}}")
        shown = [
            f"{meter.spend(_json_key(key))}: {_json_value(item, shape, meter, depth + 1)}"
            for key, item in islice(value.items(), shape.keys)
        ]
        if len(value) > shape.keys:
            shown.append(meter.spend(f'"…": "{len(value) - shape.keys} more keys"'))
        return "{" + ", ".join(shown) + "}"
    if isinstance(value, list):
        if not value:
            return "[]"
        if depth >= shape.depth:
            return meter.spend(f"[…{len(value)} items]")
        return "[" + ", ".join(_json_items(value, shape, meter, depth)) + "]"
    if isinstance(value, str) and len(value) > shape.chars:
        value = f"{value[: shape.chars]}… (+{len(value) - shape.chars} chars)"
    return meter.spend(json.dumps(value, ensure_ascii=False))


def _json_items(items: list[Any], shape: _Shape, meter: _Meter, depth: int) -> list[str]:
    """A short array whole; a long one as its first items, its shape, and its last item."""
    if len(items) < _LONG_ARRAY:
        return [_json_value(item, shape, meter, depth + 1) for item in items]
    shown = [_json_value(item, shape, meter, depth + 1) for item in items[: shape.items]]
    hidden = len(items) - shape.items - 1
    summary = f"… {hidden} more of {len(items)} items: {_json_kinds(items)} …"
    shown.append(meter.spend(json.dumps(summary, ensure_ascii=False)))
    shown.append(_json_value(items[-1], shape, meter, depth + 1))
    return shown


def _json_kinds(items: list[Any]) -> str:
    """What the items of an array are, from its first 50: `objects with keys a, b`…"""
    sample = items[:50]
    if all(isinstance(item, dict) for item in sample):
        keys: dict[str, None] = {}
        for item in sample:
            keys.update(dict.fromkeys(islice(item, 30)))
        return "objects with keys " + ", ".join(islice(keys, 30))
    return " / ".join(dict.fromkeys(_JSON_KINDS.get(type(item), "values") for item in sample))


_JSON_KINDS = {
    dict: "objects",
    list: "arrays",
    str: "strings",
    int: "numbers",
    float: "numbers",
    bool: "booleans",
    type(None): "nulls",
}


def _json_key(key: str) -> str:
    return json.dumps(_clip(key, 120), ensure_ascii=False)
