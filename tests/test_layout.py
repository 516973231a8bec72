"""Each folder holds one concern, and says which: a newcomer finds a concern by its
folder (docs/ARCHITECTURE.md draws the same map). A new module lands in one of
these packages or in an app's short list of Django's own modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# package -> the words its docstring must open with (its concern, named).
CONCERNS = {
    "memflow_site/runtime": "The ground floor",
    "memflow_site/client": "What runs on the agent's machine",
    "memflow_site/cli": "The `memflow` command",
    "memflow_site/mcp": "memflow's MCP endpoint",
    "memflow_site/porting": "Moving memory in and out",
    "contexts/tenancy": "Tenancy and sessions",
    "contexts/rest": "The REST plumbing",
    "contexts/declarations": "Directory declarations",
    "contexts/hooks": "The hook pipeline",
    "contexts/flowctx": "flowctx",
    "contexts/secrets": "Refuse text that looks like a credential",
    "contexts/dashboard": "The dashboard's shared floor",
    "memories/api": "The memory engine's REST endpoints",
    "memories/selectors": "Reads of the memory engine",
    "memories/services": "Writes of the memory engine",
    "memories/dashboard": "The memory engine's dashboard pages",
    "memories/bench": "`memflow bench`",
}

# What may stay at an app's top level: Django's own modules and the app's shared
# bones; everything else belongs to a concern's package.
TOP_LEVEL = {
    "contexts": {"admin", "apps", "checks", "errors", "fairness", "models", "urls"},
    "memflow_site": {
        "asgi", "asgi_parts", "bodies", "busy", "database_url", "embedded_pg", "fairness",
        "health", "log", "metrics", "settings", "urls", "version", "views", "wsgi",
    },
}  # fmt: skip


@pytest.mark.parametrize("package", sorted(CONCERNS))
def test_each_package_names_its_concern(package: str) -> None:
    init = ROOT / package / "__init__.py"
    docstring = ast.get_docstring(ast.parse(init.read_text())) or ""
    assert docstring.startswith(CONCERNS[package]), f"{package}: {docstring[:80]!r}"


@pytest.mark.parametrize("app", sorted(TOP_LEVEL))
def test_no_loose_modules_at_the_top(app: str) -> None:
    loose = {p.stem for p in (ROOT / app).glob("*.py")} - {"__init__"}
    assert loose - TOP_LEVEL[app] == set()


def test_benches_live_in_one_place() -> None:
    benches = {p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*bench*.py")}
    benches = {b for b in benches if not b.startswith((".venv/", "tests/"))}
    assert benches == {"memflow_site/cli/bench.py"}  # the command; the code is memories/bench/
