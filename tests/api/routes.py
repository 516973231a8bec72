"""Discover the project's URL patterns, so that suites cover every route
added later without being edited."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from django.urls import URLPattern, URLResolver, get_resolver

_CONVERTER = re.compile(r"<(?:(?P<conv>\w+):)?(?P<name>\w+)>")


@dataclass(frozen=True)
class Route:
    pattern: str  # e.g. "api/v1/workspaces/<slug:slug>/members/<str:username>/"
    name: str | None

    def fill(self, **values: str) -> str:
        def sub(match: re.Match[str]) -> str:
            name, conv = match["name"], match["conv"] or "str"
            if name in values:
                return values[name]
            return {"int": "1", "slug": "x", "uuid": "00000000-0000-0000-0000-000000000000"}.get(
                conv, "x"
            )

        return "/" + _CONVERTER.sub(sub, self.pattern)


def all_routes() -> Iterator[Route]:
    def walk(patterns: list[URLPattern | URLResolver], prefix: str) -> Iterator[Route]:
        for entry in patterns:
            text = prefix + str(entry.pattern)
            if isinstance(entry, URLResolver):
                yield from walk(entry.url_patterns, text)
            else:
                yield Route(pattern=text.lstrip("^").rstrip("$"), name=entry.name)

    yield from walk(get_resolver().url_patterns, "")


def workspace_api_routes() -> list[Route]:
    return [r for r in all_routes() if r.pattern.startswith("api/v1/workspaces/<slug:slug>/")]


def workspace_page_routes() -> list[Route]:
    return [r for r in all_routes() if r.pattern.startswith("w/<slug:slug>/")]
