"""Search results: hits grouped by file; every distinct path stays."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from contexts.flowctx.projection.lines import _clip, _first_fitting, _padded

_HIT = re.compile(r"\n((?=[^\s:]*[A-Za-z/._])[^\s:]+)([:-])(\d+)\2([^\n]*)")


def _project_search(text: str, *, limit: int, exit_code: int | None) -> str | None:
    """Hits grouped by file: every distinct path stays, the hit lines shrink to fit."""
    files: dict[str, list[tuple[str, str]]] = {}  # path → [(line number, text)]
    hits = 0
    for match in _HIT.finditer(_padded(text)):
        path, separator, number, rest = match.groups()
        if separator == ":":  # `-` marks context lines (grep -C)
            files.setdefault(path, []).append((number, rest))
            hits += 1
    if not files:
        return None
    header = f"{hits} hits in {len(files)} files"

    def with_lines(per_file: int) -> Callable[[], Iterator[str]]:
        def render() -> Iterator[str]:
            yield header
            for path, found in files.items():
                yield f"{path} ({len(found)})"
                for number, rest in found[:per_file]:
                    yield f"  {number}: {_clip(rest.strip(), 160)}"
                if len(found) > per_file:
                    yield f"  … {len(found) - per_file} more"

        return render

    def numbers_only() -> Iterator[str]:
        yield header
        for path, found in files.items():
            numbers = ", ".join(number for number, _ in found[:12])
            more = ", …" if len(found) > 12 else ""
            yield f"{path} ({len(found)}): {numbers}{more}"

    def paths_only() -> Iterator[str]:
        yield header
        yield from (f"{path} ({len(found)})" for path, found in files.items())

    levels = [with_lines(5), with_lines(2), numbers_only, paths_only]
    return _first_fitting(levels, limit)
