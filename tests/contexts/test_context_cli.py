"""`memflow context` and `memflow context push`, run as the real command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contexts.declarations import Assembly, DiskSource, assemble
from contexts.models import ContextDocument, Declaration
from tests.contexts.trees import HOSTNAME, canonical, write_tree

MEMFLOW = str(Path(sys.executable).with_name("memflow"))


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DSH_", "MEMFLOW_", "DATABASE_URL", "DJANGO_"))
    }
    # A data directory that must stay untouched: the local mode needs no server.
    env["MEMFLOW_DATA_DIR"] = str(tmp_path / "no-data-here")
    env.update(extra)
    return env


def memflow(
    *args: str, env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MEMFLOW, "context", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    return write_tree(
        tmp_path / "tree",
        {
            ".dsh/context.yaml": "systemPrompt: [PROTOCOL.md]\n",
            "PROTOCOL.md": "Write things down.\n",
            "app/.dsh/context.yaml": "systemPrompt:\n  - AGENT.md\npreload:\n"
            "  - memory/${device}/status.md\n  - memory/notes.md\ninherit: true\n",
            "app/AGENT.md": "You are the app agent.\n",
            "app/memory/laptop/status.md": "状态良好\n",
            "app/memory/notes.md": "notes\n",
            "app/.device": "laptop\n",
            "dispatch/ROLE.md": "role\n",
        },
    )


def test_it_prints_the_sections_in_order_the_preload_and_the_notes(tree, tmp_path):
    result = memflow(str(tree / "app"), "--hostname", HOSTNAME, env=_env(tmp_path))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.index("Write things down.") < out.index("You are the app agent.")
    assert f"=== identity:0 (order 10): PROTOCOL.md -> {tree}/PROTOCOL.md" in out
    assert "=== preload: the first user message, once per session (2 files)" in out
    assert "=== memory/laptop/status.md ===\n状态良好" in out
    assert not (tmp_path / "no-data-here").exists()


def test_json_output_is_the_resolvers_assembly_byte_for_byte(tree, tmp_path):
    result = memflow("--json", "--hostname", HOSTNAME, env=_env(tmp_path), cwd=tree / "app")
    assert result.returncode == 0, result.stderr
    printed = Assembly.from_json(json.loads(result.stdout))
    local = assemble(source=DiskSource(), directory=str(tree / "app"), hostname=HOSTNAME)
    assert canonical(printed) == canonical(local)
    again = memflow("--json", "--hostname", HOSTNAME, env=_env(tmp_path), cwd=tree / "app")
    assert again.stdout == result.stdout  # deterministic


def test_it_reads_the_per_run_variables_from_its_environment(tree, tmp_path):
    env = _env(
        tmp_path,
        DSH_CONTEXT_SYSTEM_PROMPT=str(tree / "dispatch/ROLE.md"),
        DSH_CONTEXT_PARAMS='{"only": "tests"}',
        DSH_CONTEXT_PRELOAD="memory/notes.md",
    )
    body = json.loads(memflow(str(tree / "app"), "--json", env=env).stdout)
    assert [s["text"] for s in body["sections"]] == [
        "Write things down.\n",
        "You are the app agent.\n",
        "role\n",
        '{"only": "tests"}',
    ]
    assert body["sections"][-1]["order"] == 26
    ignored = json.loads(
        memflow(str(tree / "app"), "--json", env=_env(tmp_path, DSH_CONTEXT_IGNORE="1")).stdout
    )
    assert ignored["sections"] == [] and ignored["preload"] is None


def test_discover_device_and_options_from_the_command_line(tree, tmp_path):
    options = tmp_path / "options.yaml"
    options.write_text("perFileBytes: 6\nsectionOrderBase: 30\n")
    body = json.loads(
        memflow(
            str(tree / "app"),
            "--json",
            "--discover",
            "cwd",
            "--device",
            "laptop",
            "--config",
            str(options),
            env=_env(tmp_path),
        ).stdout
    )
    # cwd discovery still follows app's own `inherit: true`.
    assert [s["order"] for s in body["sections"]] == [30, 31]
    status = body["preload"]["files"][0]
    assert (status["sent_bytes"], status["limited"]) == (6, True)
    bad = tmp_path / "bad.yaml"
    bad.write_text("perFileBytes: lots\n")
    refused = memflow(str(tree / "app"), "--config", str(bad), env=_env(tmp_path))
    assert refused.returncode == 1
    assert "perFileBytes must be a whole number" in refused.stderr


def test_a_malformed_declaration_is_reported_and_the_assembly_goes_on(tmp_path):
    root = write_tree(
        tmp_path / "t", {".dsh/context.yaml": "preload:\n  - a\n -b\n", "memory/x.md": "x"}
    )
    result = memflow(str(root), env=_env(tmp_path))
    assert result.returncode == 0
    assert f"{root}/.dsh/context.yaml:3: " in result.stdout
    assert "=== memory/x.md ===\nx" in result.stdout


def test_a_missing_directory_is_an_error(tmp_path):
    result = memflow(str(tmp_path / "nowhere"), env=_env(tmp_path))
    assert result.returncode == 1
    assert "is not a directory" in result.stderr


def test_the_local_mode_never_imports_django(tree, tmp_path):
    code = (
        "import sys\n"
        "from memflow_site.cli import main as cli\n"
        f"cli.main(['context', {str(tree / 'app')!r}, '--json'])\n"
        "assert not [m for m in sys.modules if m == 'django' or m.startswith('django.')]\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=_env(tmp_path), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


def test_push_needs_the_server_settings(tree, tmp_path):
    result = memflow("push", str(tree / "app"), env=_env(tmp_path))
    assert result.returncode == 1
    assert "Set MEMFLOW_URL, MEMFLOW_API_KEY, MEMFLOW_WORKSPACE" in result.stderr


@pytest.mark.django_db(transaction=True)
def test_push_uploads_the_declarations_and_files_the_server_then_assembles_alike(
    tree, tmp_path, live_server, acme, alice, make_key
):
    env = _env(
        tmp_path,
        MEMFLOW_URL=live_server.url,
        MEMFLOW_API_KEY=make_key(alice),
        MEMFLOW_WORKSPACE="acme",
    )
    pushed = memflow("push", str(tree / "app"), "--hostname", HOSTNAME, env=env)
    assert pushed.returncode == 0, pushed.stderr
    assert "Pushed 2 declarations and 4 documents to workspace acme" in pushed.stderr
    assert sorted(Declaration.objects.values_list("directory", flat=True)) == [
        str(tree),
        str(tree / "app"),
    ]
    assert sorted(ContextDocument.objects.values_list("path", flat=True)) == sorted(
        str(tree / p)
        for p in [
            "PROTOCOL.md",
            "app/AGENT.md",
            "app/memory/laptop/status.md",
            "app/memory/notes.md",
        ]
    )  # not the machine's own .device

    import httpx

    response = httpx.post(
        f"{live_server.url}/api/v1/workspaces/acme/contexts/assemble/",
        headers={"Authorization": f"Bearer {env['MEMFLOW_API_KEY']}"},
        json={
            "directory": str(tree / "app"),
            "session_id": "pushed",
            "device": "laptop",
            "hostname": HOSTNAME,
        },
        timeout=30,
    )
    assert response.status_code == 200, response.text
    server = response.json()
    local = json.loads(memflow(str(tree / "app"), "--json", "--hostname", HOSTNAME, env=env).stdout)
    assert server["system_sections"] == local["sections"]
    assert server["preload"] == local["preload"]


@pytest.mark.django_db(transaction=True)
def test_a_refused_push_says_why(tree, tmp_path, live_server, acme, victor, make_key):
    env = _env(
        tmp_path,
        MEMFLOW_URL=live_server.url,
        MEMFLOW_API_KEY=make_key(victor),
        MEMFLOW_WORKSPACE="acme",
    )
    result = memflow("push", str(tree / "app"), env=env)
    assert result.returncode == 1
    assert "The server refused the push (403)" in result.stderr
