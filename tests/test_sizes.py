"""No module over 800 lines and no function over 80 (issue #24), generated migrations aside.

A module that size is several concerns, and a function that long is several
steps: both are split, by concern and into helpers named for what they do,
before they are added to.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("contexts", "memories", "skills", "memflow_site", "tests")
MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 80


def sources() -> list[Path]:
    return sorted(
        path
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.relative_to(ROOT).parts
    )


def oversized(path: Path) -> list[str]:
    """`path:line what (n lines)` for the module if too long, and each function too long."""
    text = path.read_text(encoding="utf-8")
    name = path.relative_to(ROOT).as_posix()
    found = []
    lines = text.count("\n")
    if lines > MAX_MODULE_LINES:
        found.append(f"{name}:1 module ({lines} lines)")
    for node in ast.walk(ast.parse(text, filename=name)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{name}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_module_or_function_is_over_its_size():
    offenders = [line for path in sources() for line in oversized(path)]
    assert not offenders, (
        f"over {MAX_MODULE_LINES} lines a module or {MAX_FUNCTION_LINES} a function "
        "(split it by concern):\n" + "\n".join(offenders)
    )


def test_the_check_sees_the_project():
    # A wrong root or a pattern that matched nothing would pass the test above vacuously.
    paths = {path.relative_to(ROOT).as_posix() for path in sources()}
    assert {
        "contexts/secrets/__init__.py",
        "memflow_site/cli/main.py",
        "tests/test_sizes.py",
    } <= paths
    assert not any("/migrations/" in path for path in paths)
