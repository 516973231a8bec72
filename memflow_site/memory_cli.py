"""`memflow retrieve | recall | get`: memflow's reads, as a model runs them in its shell.

Without memflow's MCP server, these are what the hooks' instructions name:
they use the hook client's configuration (MEMFLOW_URL, MEMFLOW_API_KEY,
MEMFLOW_WORKSPACE or the config file), so the model never needs a key of
its own. `retrieve` prints a stored original byte for byte; the others
print what the MCP tools answer. Errors go to stderr with exit status 1.

Standard library only, like the hook client it shares its HTTP call with.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.parse
from typing import Any

from memflow_site import hook_client


class ReadError(Exception):
    """A sentence for stderr."""


def _call(config: dict[str, Any], method: str, path: str, body: Any = None) -> bytes:
    """One call under /api/v1/workspaces/<workspace>/, the answer's bytes, or ReadError."""
    workspace = config.get("workspace")
    if not workspace:
        raise ReadError("say which workspace: --workspace, MEMFLOW_WORKSPACE or the config file")
    slug = urllib.parse.quote(str(workspace), safe="")
    try:
        status, data = hook_client.exchange(
            config,
            method,
            f"/api/v1/workspaces/{slug}/{path}",
            None if body is None else json.dumps(body).encode(),
            deadline=time.monotonic() + hook_client.COMMAND_TIMEOUT,
            connect_timeout=hook_client.COMMAND_TIMEOUT,
        )
    except (OSError, ValueError) as exc:
        raise ReadError(f"cannot reach {config['url']}: {exc}") from None
    if status >= 400:
        detail = ""
        try:
            answer = json.loads(data)
            detail = str(answer.get("detail") or "") if isinstance(answer, dict) else ""
        except ValueError:
            pass
        raise ReadError(f"{status} {detail or data[:200].decode('utf-8', 'replace')}")
    return data


def _json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        raise ReadError("the server's answer is not JSON") from None


def _session_query(session: str | None) -> str:
    return f"?{urllib.parse.urlencode({'session': session})}" if session else ""


def _retrieve(args: argparse.Namespace, config: dict[str, Any]) -> None:
    if bool(args.sha256) == bool(args.node):
        raise ReadError("give a compression ref (sha256) or --node with --session")
    if args.sha256:
        sha = urllib.parse.quote(args.sha256.strip(), safe="")
        sys.stdout.buffer.write(_call(config, "GET", f"compression/{sha}/"))
        return
    if not args.session:
        raise ReadError("--node needs the session it belongs to: --session")
    session = urllib.parse.quote(args.session, safe="")
    node = urllib.parse.quote(args.node, safe="")
    answer = _json(_call(config, "GET", f"sessions/{session}/summaries/{node}/"))
    sys.stdout.write(str(answer.get("text", "")) + "\n")


def _recall(args: argparse.Namespace, config: dict[str, Any]) -> None:
    body: dict[str, Any] = {
        "query": args.query,
        "mode": "index" if args.index else "block",
        "k": args.k,
    }
    if args.session:
        body["session"] = args.session
    answer = _json(_call(config, "POST", "recall/", body))
    block = answer.get("block") if isinstance(answer, dict) else None
    sys.stdout.write((block or "No matching memories.") + "\n")


def _get(args: argparse.Namespace, config: dict[str, Any]) -> None:
    answer = _json(_call(config, "GET", f"memories/{args.id}/{_session_query(args.session)}"))
    head = [f"#{answer.get('id')}", f"source={answer.get('source')}"]
    if answer.get("compartment"):
        head.append(f"compartment={answer['compartment']}")
    if answer.get("superseded_by"):
        head.append(f"SUPERSEDED by #{answer['superseded_by']}")
    sys.stdout.write(f"[{' | '.join(head)}]\n{answer.get('text', '')}\n")


COMMANDS = {"retrieve": _retrieve, "recall": _recall, "get": _get}


def run(args: argparse.Namespace) -> int:
    config = hook_client.load_config()
    if args.workspace:
        config["workspace"] = args.workspace
    try:
        COMMANDS[args.command](args, config)
    except ReadError as exc:
        print(f"memflow: {exc}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    return 0


def add_parsers(sub: Any, func: Any) -> None:
    """`retrieve`, `recall` and `get` on the `memflow` command's sub-parsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--workspace", help="default: MEMFLOW_WORKSPACE or the config file")
    common.add_argument("--session", help="the harness session id (for the usage ledger)")
    retrieve = sub.add_parser(
        "retrieve",
        parents=[common],
        help="print a stored tool output byte for byte (or a handoff note's node with --node)",
    )
    retrieve.add_argument("sha256", nargs="?", help="the ref a compression note names")
    retrieve.add_argument("--node", help="a summary node id (with --session)")
    recall = sub.add_parser("recall", parents=[common], help="recall memories for a query")
    recall.add_argument("query")
    recall.add_argument("--index", action="store_true", help="one line per entry, ids first")
    recall.add_argument("-k", type=int, default=10, help="how many entries to rank")
    get = sub.add_parser("get", parents=[common], help="print one memory in full")
    get.add_argument("id", type=int)
    for parser in (retrieve, recall, get):
        parser.set_defaults(func=func)
