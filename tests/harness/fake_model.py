"""A fake Anthropic Messages API on 127.0.0.1, for driving the real Claude Code CLI.

Claude Code is pointed at it with ANTHROPIC_BASE_URL. It answers
`POST /v1/messages` (streaming SSE or plain JSON) from a script of turns,
`POST /v1/messages/count_tokens` with a plausible count, `GET /v1/models`
with one model, and anything else with a JSON 404. Every request is logged
(path, headers, parsed body) so a test can assert on what the model was sent.

The script is indexed by the conversation's position, not by call order: the
reply to a main-loop request is `script[n]`, where n is the number of
assistant messages the request already carries. A retried request gets the
same reply, and side requests (Claude Code's own small calls, which carry no
tools) never consume a step.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "claude-sonnet-4-5-20250929"


@dataclass(frozen=True)
class Text:
    """The model answers with text and ends its turn."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """The model calls one tool (`Bash`, `mcp__memflow__…`) and waits for its result."""

    name: str
    input: dict[str, Any]
    text: str = ""  # said before the call, as models often do


@dataclass(frozen=True)
class Reply:
    """A turn decided from the request it answers: e.g. a command memflow's hooks named."""

    decide: Callable[[dict[str, Any]], Text | ToolUse]


Turn = Text | ToolUse | Reply


@dataclass
class Logged:
    method: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def is_main(self) -> bool:
        return self.path.split("?", 1)[0] == "/v1/messages" and is_main_request(self.body)

    def text(self) -> str:
        """Every string in the body, joined: what an assertion searches."""
        return "\n".join(strings(self.body))


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def is_main_request(body: Any) -> bool:
    """Claude Code's main loop sends its tools; its side calls send none."""
    if not isinstance(body, dict):
        return False
    tools = body.get("tools") or []
    return any(isinstance(t, dict) and t.get("name") == "Bash" for t in tools)


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks in a request's messages, in order."""
    found: list[dict[str, Any]] = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            found.extend(
                b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
            )
    return found


@dataclass
class FakeModel:
    script: list[Turn] = field(default_factory=list)
    log: list[Logged] = field(default_factory=list)
    url: str = ""
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # --- what tests read --------------------------------------------------------------

    def main_requests(self) -> list[Logged]:
        with self._lock:
            return [r for r in self.log if r.is_main]

    def requests(self) -> list[Logged]:
        with self._lock:
            return list(self.log)

    # --- answering ----------------------------------------------------------------------

    def reply_for(self, body: dict[str, Any]) -> Text | ToolUse:
        if not is_main_request(body):
            return Text("OK")
        step = sum(1 for m in body.get("messages") or [] if m.get("role") == "assistant")
        turn = self.script[step] if step < len(self.script) else Text("Done.")
        return turn.decide(body) if isinstance(turn, Reply) else turn

    def record(self, logged: Logged) -> None:
        with self._lock:
            self.log.append(logged)

    def next_id(self) -> int:
        with self._lock:
            return next(self._ids)


def _content(turn: Text | ToolUse, n: int) -> tuple[list[dict[str, Any]], str]:
    blocks: list[dict[str, Any]] = []
    if isinstance(turn, Text):
        return [{"type": "text", "text": turn.text}], "end_turn"
    if turn.text:
        blocks.append({"type": "text", "text": turn.text})
    blocks.append(
        {"type": "tool_use", "id": f"toolu_fake{n:06d}", "name": turn.name, "input": turn.input}
    )
    return blocks, "tool_use"


def _usage(body: dict[str, Any]) -> dict[str, int]:
    # Roughly four characters a token: Claude Code budgets its context with it.
    return {
        "input_tokens": max(1, len(json.dumps(body.get("messages", []))) // 4),
        "output_tokens": 12,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _handler(model: FakeModel) -> type[BaseHTTPRequestHandler]:
    """A request handler class answering for `model`."""
    return type("Handler", (_Handler,), {"model": model})


_MODELS = {
    "data": [{"type": "model", "id": MODEL, "display_name": "Fake Sonnet"}],
    "has_more": False,
    "first_id": MODEL,
    "last_id": MODEL,
}


class _Handler(BaseHTTPRequestHandler):
    """The Messages API as Claude Code calls it: count_tokens, messages, models."""

    model: FakeModel
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the log list is the record; stderr noise helps nobody

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", f"req_fake{self.model.next_id()}")
        self.end_headers()
        self.wfile.write(data)

    def _handle(self) -> None:
        body = self._read_body() if self.command in ("POST", "PUT", "PATCH") else None
        path = self.path.split("?", 1)[0]
        self.model.record(Logged(self.command, self.path, dict(self.headers.items()), body))
        if self.command == "POST" and path == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": _usage(body or {})["input_tokens"]})
        elif self.command == "POST" and path == "/v1/messages" and isinstance(body, dict):
            self._messages(body)
        elif self.command == "GET" and path == "/v1/models":
            self._json(200, _MODELS)
        else:
            self._json(
                404,
                {
                    "type": "error",
                    "error": {"type": "not_found_error", "message": f"no {path} here"},
                },
            )

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _handle

    def _messages(self, body: dict[str, Any]) -> None:
        n = self.model.next_id()
        try:
            turn = self.model.reply_for(body)
        except Exception as exc:  # a test's Reply that failed: said, not hung on
            turn = Text(f"FAKE-MODEL-ERROR {exc!r}")
        blocks, stop = _content(turn, n)
        message = {
            "id": f"msg_fake{n:06d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or MODEL,
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": _usage(body),
        }
        if not body.get("stream"):
            self._json(200, message)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in _sse_events(message):
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        self.wfile.flush()
        self.close_connection = True


def _sse_events(message: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The message as the Messages API streams it: start, blocks with deltas, stop."""
    usage = message["usage"]
    yield {
        "type": "message_start",
        "message": {
            **message,
            "content": [],
            "stop_reason": None,
            "usage": {**usage, "output_tokens": 1},
        },
    }
    yield {"type": "ping"}
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            }
            yield {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "text_delta", "text": block["text"]},
            }
        else:
            yield {
                "type": "content_block_start",
                "index": index,
                "content_block": {**block, "input": {}},
            }
            yield {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
            }
        yield {"type": "content_block_stop", "index": index}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": {"output_tokens": usage["output_tokens"]},
    }
    yield {"type": "message_stop"}


@contextmanager
def fake_model(script: list[Turn] | None = None) -> Iterator[FakeModel]:
    """The fake API on a free loopback port, for the duration of the block."""
    model = FakeModel(script=list(script or []))
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(model))
    server.daemon_threads = True
    model.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="fake-model", daemon=True)
    thread.start()
    try:
        yield model
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    # By hand: `python -m tests.harness.fake_model` then point Claude Code at it.
    import sys
    import time

    with fake_model([ToolUse("Bash", {"command": "echo hi"}), Text("All done.")]) as m:
        print(m.url, file=sys.stderr)
        while True:
            time.sleep(3600)
