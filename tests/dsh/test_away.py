"""A memflow that is away never stalls dsh, and one slow answer costs no memory."""

from __future__ import annotations

import socket

from tests.dsh.conftest import Account, DshMaker, memflow_env
from tests.dsh.fake_deepseek import Text
from tests.dsh.stalls import holding_proxy, hung_server
from tests.memflow_site.helpers import Served


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_server_that_refuses_connections_costs_nothing(dsh: DshMaker) -> None:
    h = dsh(memflow_env(f"http://127.0.0.1:{closed_port()}", "mf_k", "w"))
    h.install_bundle()

    run = h.run("Say hello", [Text("Hello.")])

    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "Hello."
    # Said once, where a headless run shows it (stdout is the answer's).
    said = [line for line in run.stderr.splitlines() if line.startswith("memflow:")]
    assert len(said) == 1 and "cannot be reached (ECONNREFUSED)" in said[0], run.stderr
    print(f"refused server: the run took {run.seconds:.2f} s")


def test_a_hung_server_does_not_hold_the_session_start(dsh: DshMaker) -> None:
    with hung_server() as hung:
        h = dsh(memflow_env(hung.url, "mf_k", "w"))
        h.install_bundle()

        run = h.run("Say hello", [Text("Hello.")])

        assert run.returncode == 0, run.stderr
        assert run.stdout.strip() == "Hello."
        asked = h.model.main_requests()[0].at
        mcp = [r for r in hung.requests() if r.path.startswith("/mcp")]
        # The model was asked while memflow's MCP server had not answered: dsh
        # did not wait for it (the MCP SDK's own wait is 60 s).
        assert all(r.closed is None or r.closed > asked for r in mcp), mcp
        hooks = [r for r in hung.requests() if r.path.startswith("/api/v1/hooks/")]
        assert hooks, hung.requests()
        assert "did not answer session-start within 1000 ms" in run.stderr, run.stderr
        print(f"hung server: the run took {run.seconds:.2f} s")


def test_one_slow_answer_does_not_cost_the_next_session_its_memory(
    live: Served, account: Account, dsh: DshMaker
) -> None:
    account.api.post(
        "core/user/", json={"action": "add", "content": "Prefers squash merges"}
    ).raise_for_status()
    with holding_proxy(live.url, "/api/v1/hooks/session-start") as proxy:
        h = dsh(memflow_env(proxy.url, account.key, account.workspace.slug))
        h.install_bundle()
        slow = h.run("First session, while memflow is slow", [Text("OK.")])
        assert slow.returncode == 0, slow.stderr
        assert "did not answer session-start" in slow.stderr, slow.stderr
        print(f"slow: {slow.seconds:.2f} s")

        # Another session on the same machine, memflow answering again.
        later = h.run("Second session", [Text("OK.")])

    assert later.returncode == 0, later.stderr
    print(f"later: {later.seconds:.2f} s")
    first_of_later = next(r for r in h.model.main_requests() if "Second session" in r.text())
    assert "Prefers squash merges" in first_of_later.system
