"""The one-way arrows between the parts of memflow, read from the source's imports.

The apps stand on `contexts.runtime` and `contexts.tokens` (the ground floor)
and never on `memflow_site`, the floor above them; the hook pipeline knows its
plug-ins only through the registry; skills uses flowctx through its public
names; `contexts` imports neither `memories` nor `skills`. Every import counts,
including those inside functions and under `TYPE_CHECKING`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import contexts.flowctx

ROOT = Path(__file__).resolve().parent.parent
APPS = ("contexts", "memories", "skills")
PLUG_INS = ("contexts.flowctx", "contexts.hook_providers", "memories", "skills")


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


@pytest.mark.parametrize("app", APPS)
def test_no_app_imports_the_site(app: str) -> None:
    assert offences(sources(app), lambda module, name: within(module, "memflow_site")) == []


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
    ground = [*sources("contexts/runtime"), ROOT / "contexts/tokens.py"]

    def bad(module: str, name: str | None) -> bool:
        above = within(module, "memflow_site", *APPS)
        return above and not within(module, "contexts.runtime")

    assert offences(ground, bad) == []
