"""`memflow retrieve | recall | get | remember | forget`: memflow's memory commands, as a
model (or a person) runs them in a shell.

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

from memflow_site.client import hook as hook_client


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


def _remember(args: argparse.Namespace, config: dict[str, Any]) -> None:
    body: dict[str, Any] = {"text": args.text, "private": args.private}
    if args.compartment:
        body["compartment"] = args.compartment
    if args.ttl:
        body["ttl"] = args.ttl
    if args.expires_at:
        body["expires_at"] = args.expires_at
    if args.session:
        body["session"] = args.session
    answer = _json(_call(config, "POST", "memories/", body))
    memory = answer.get("memory") or {}
    notes = [str(answer.get("outcome"))]
    if memory.get("private"):
        notes.append("private")
    if memory.get("expires_at"):
        notes.append(f"expires {memory['expires_at']}")
    sys.stdout.write(f"#{answer.get('id')} ({', '.join(notes)})\n")


def _filter_pairs(pairs: list[str]) -> dict[str, Any]:
    """`--filter key=value` pairs as the bulk forget's body; `tag` may repeat."""
    body: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise ReadError(f"--filter takes key=value, not {pair!r}")
        if key in ("tag", "tags"):
            body.setdefault("tags", []).append(value)
        else:
            body[key] = value
    return body


def _forget(args: argparse.Namespace, config: dict[str, Any]) -> None:
    body = _filter_pairs(args.filter or [])
    if not body:
        raise ReadError("say which memories: --filter key=value (compartment, tag, source, ...)")
    body["dry_run"] = args.dry_run
    if args.reason:
        body["reason"] = args.reason
    answer = _json(_call(config, "POST", "memories/forget/", body))
    if answer.get("dry_run"):
        lines = [f"Would forget {answer.get('matched')} memories. Among them:"]
        lines += [f"  #{m.get('id')} {str(m.get('text', ''))[:100]}" for m in answer["sample"]]
    else:
        lines = [
            f"Forgot {len(answer.get('forgotten') or [])} memories (run {answer.get('bulk')})."
        ]
        if answer.get("remaining"):
            lines.append(f"{answer['remaining']} more match: run it again.")
    sys.stdout.write("\n".join(lines) + "\n")


COMMANDS = {
    "retrieve": _retrieve,
    "recall": _recall,
    "get": _get,
    "remember": _remember,
    "forget": _forget,
}


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
    remember = sub.add_parser("remember", parents=[common], help="store one memory")
    remember.add_argument("text")
    remember.add_argument("--private", action="store_true", help="only you will see it")
    remember.add_argument("--ttl", help='forget it after: seconds, or "90m", "12h", "7d"')
    remember.add_argument("--expires-at", help="forget it after this ISO 8601 time")
    remember.add_argument("--compartment", help="e.g. lessons")
    forget = sub.add_parser("forget", parents=[common], help="forget every memory a filter matches")
    forget.add_argument(
        "--filter",
        action="append",
        metavar="KEY=VALUE",
        help="compartment, tag (repeatable), source, app, state_key, contains, session, "
        "since, until (ISO times); all must hold",
    )
    forget.add_argument("--dry-run", action="store_true", help="count and show, forget nothing")
    forget.add_argument("--reason", help="kept with each tombstone")
    for parser in (retrieve, recall, get, remember, forget):
        parser.set_defaults(func=func)
