"""Tool calls in a real dsh session: memflow's MCP tools, and large outputs."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

from memories.models import CoreMemory, Memory
from tests.dsh.conftest import Account, DshMaker, memflow_env
from tests.dsh.fake_deepseek import Reply, Text, ToolCall
from tests.memflow_site.helpers import Served

# About 130 KB: dsh's bash tool keeps the last 64 KiB of it and names the log file.
BUILD = (
    "seq 1 2300 | awk '{ if ($1 == 1234) print \"heron/core/part_1234.c:88:5: error: "
    'mismatched types, expected u32, found i64"; '
    'printf "[build] compiling heron/core/part_%d.c (%d warnings) ok\\n", $1, $1 % 17 }\''
)


def test_memflows_mcp_tools_work_through_dsh(live: Served, account: Account, dsh: DshMaker) -> None:
    h = dsh(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_bundle()
    fact = "The Heron release train leaves every second Tuesday at 10:00 UTC."

    run = h.run(
        "Remember when the Heron release train leaves",
        [
            ToolCall("mcp__memflow__flymemory_remember", {"text": fact}),
            ToolCall(
                "mcp__memflow__memory",
                {"action": "add", "target": "user", "content": "Likes short answers"},
            ),
            Text("Remembered."),
        ],
    )

    assert run.returncode == 0, run.stderr
    requests = h.model.main_requests()
    assert "mcp__memflow__flowctx_retrieve" in requests[0].tool_names()
    assert Memory.objects.filter(workspace=account.workspace, text=fact).exists()
    core = CoreMemory.objects.get(scope=CoreMemory.Scope.USER, user__username="dsh-user")
    assert "Likes short answers" in core.content
    # Each tool's answer reached the model.
    assert "Likes short answers" in requests[2].text()


def test_a_large_bash_output_is_projected_and_kept_whole(
    live: Served, account: Account, dsh: DshMaker, tmp_path
) -> None:
    h = dsh(memflow_env(live.url, account.key, account.workspace.slug))
    h.install_bundle()
    whole = subprocess.run(["bash", "-c", BUILD], capture_output=True, check=True).stdout
    assert len(whole) > 110_000

    def retrieve(body: dict[str, object]) -> ToolCall:
        """The model asks for the original back by the hash the projection named."""
        named = re.findall(r"[0-9a-f]{64}", json.dumps(body["messages"]))
        return ToolCall("mcp__memflow__flowctx_retrieve", {"hash": named[-1]})

    run = h.run(
        "Build Heron and tell me what fails",
        [
            ToolCall("bash", {"command": BUILD, "description": "build"}),
            Reply(retrieve),
            Text("part_1234 fails."),
        ],
    )

    assert run.returncode == 0, run.stderr
    seen = h.model.main_requests()[1].tool_results()[-1]
    assert len(seen) < 4000, f"the model is shown a projection, not {len(seen):,} chars"
    assert "part_1234.c:88:5: error: mismatched types" in seen
    sha256 = hashlib.sha256(whole).hexdigest()
    assert sha256 in seen, re.findall(r"[0-9a-f]{64}", seen)
    # The original is the whole output, not the 64 KiB dsh kept in memory.
    stored = account.api.get(f"compression/{sha256}/")
    assert stored.status_code == 200, stored.text[:500]
    assert stored.content == whole

    # Fetched back through MCP, it is more than dsh puts in a tool result: what
    # the model sees says where the rest is, and that file holds all of it.
    back = h.model.main_requests()[2].tool_results()[-1]
    if back != whole.decode():
        where = re.search(r"stored at: (\S+?)\.? Use read", back) or re.search(
            r"full output: ([^\]\s]+)", back
        )
        assert where, back[-600:]
        assert whole.decode() in Path(where.group(1)).read_text(), where.group(1)
