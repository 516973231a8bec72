"""The one-way arrows between the parts of memflow, read from the source's imports.

The apps stand on `memflow_site.runtime` (the ground floor: settings helpers,
token estimates, bound SQL, side threads) and on nothing else of `memflow_site`,
the floor above them; the agent-side client (`memflow_site.client`) is the
standard library alone; the hook pipeline knows its
plug-ins only through the registry; skills uses flowctx through its public
names; `contexts` imports neither `memories` nor `skills`. Every import counts,
including those inside functions and under `TYPE_CHECKING`.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import contexts.flowctx

ROOT = Path(__file__).resolve().parent.parent
APPS = ("contexts", "memories", "skills")
PLUG_INS = ("contexts.flowctx", "contexts.declarations.providers", "memories", "skills")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> Iterator[tuple[int, str, str | None]]:
    """(line, module, name or None) for each import in `path`, relative ones resolved."""
    package = module_name(path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                yield node.lineno, base, alias.name


def sources(*packages: str) -> list[Path]:
    return sorted(p for package in packages for p in (ROOT / package).rglob("*.py"))


def within(module: str, *packages: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def offences(paths: list[Path], bad: Callable[[str, str | None], bool]) -> list[str]:
    found = []
    for path in paths:
        for line, module, name in imports(path):
            if bad(module, name):
                shown = f"{module}.{name}" if name else module
                found.append(f"{path.relative_to(ROOT)}:{line} imports {shown}")
    return found


def test_the_sources_are_found() -> None:
    # A rule over no files would pass whatever the imports are.
    assert len(sources(*APPS)) > 100
    assert any(module == "django.db" for _, module, _ in imports(ROOT / "contexts/models.py"))


GROUND = "memflow_site.runtime"


@pytest.mark.parametrize("app", APPS)
def test_no_app_imports_the_site(app: str) -> None:
    def bad(module: str, name: str | None) -> bool:
        return within(module, "memflow_site") and not within(module, GROUND)

    assert offences(sources(app), bad) == []


def test_the_pipeline_imports_none_of_its_plug_ins() -> None:
    pipeline = sources("contexts/hooks")
    assert offences(pipeline, lambda module, name: within(module, *PLUG_INS)) == []


def test_skills_uses_flowctx_through_its_public_names() -> None:
    public = set(contexts.flowctx.__all__)

    def bad(module: str, name: str | None) -> bool:
        if module == "contexts.flowctx":
            return name not in public
        return within(module, "contexts.flowctx")

    assert offences(sources("skills"), bad) == []


def test_contexts_imports_neither_memories_nor_skills() -> None:
    paths = sources("contexts")
    assert offences(paths, lambda module, name: within(module, "memories", "skills")) == []


def test_the_ground_floor_imports_no_app() -> None:
    ground = sources("memflow_site/runtime")
    assert ground, "the ground floor has moved: point this test at it"

    def bad(module: str, name: str | None) -> bool:
        return within(module, "memflow_site", *APPS) and not within(module, GROUND)

    assert offences(ground, bad) == []


# What the agent's machine runs on every hook: the standard library, so a hook
# process starts in tens of milliseconds. The one exception is the declaration
# resolver, imported inside the function that reads a directory's files (it
# parses YAML), only when a session starts in a declared directory.
CLIENT_MAY_IMPORT = {("memflow_site/client/session.py", "contexts.declarations")}


def test_the_client_is_the_standard_library() -> None:
    client = sources("memflow_site/client")
    assert len(client) >= 7
    stdlib = sys.stdlib_module_names

    found = []
    for path in client:
        rel = path.relative_to(ROOT).as_posix()
        for line, module, _ in imports(path):
            top = module.split(".")[0]
            if top in stdlib or within(module, "memflow_site.client"):
                continue
            if (rel, module) not in CLIENT_MAY_IMPORT:
                found.append(f"{rel}:{line} imports {module}")
    assert found == []
