"""A fake DeepSeek chat-completions API on 127.0.0.1, for driving the real dsh.

dsh's `deepseek-official` provider is pointed at it with DEEPSEEK_BASE_URL.
It answers `POST /chat/completions` as DeepSeek streams it (OpenAI-style SSE
chunks: content and tool-call deltas, a finish chunk, a usage chunk,
`[DONE]`) from a script of turns, and anything else with a JSON 404. Every
request is logged (path, headers, parsed body) so a test can assert on what
the model was sent: the system message, the user messages, the tools.

The reply to the n-th main-loop request is `script[n]` (a count, not the
conversation's length as in tests/harness/fake_model.py: a compaction
replaces the history, so its length goes back). Side requests — dsh's
session title (no tools) and its compaction summary — get a plain text
answer and never consume a step.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "deepseek-chat"


@dataclass(frozen=True)
class Text:
    """The model answers with text and ends its turn."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """The model calls one tool (`bash`, `mcp__memflow__…`) and waits for its result."""

    name: str
    arguments: dict[str, Any]
    text: str = ""  # said before the call, as models often do


@dataclass(frozen=True)
class Reply:
    """A turn decided from the request it answers (e.g. a hash memflow's projection named)."""

    decide: Callable[[dict[str, Any]], Text | ToolCall]


Turn = Text | ToolCall | Reply


@dataclass
class Logged:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float = field(default_factory=time.monotonic)  # when it arrived, to order events

    @property
    def is_main(self) -> bool:
        return self.path.split("?", 1)[0].endswith("/chat/completions") and is_main_request(
            self.body
        )

    @property
    def system(self) -> str:
        """The system message(s): dsh's assembled prompt."""
        return "\n".join(m["content"] for m in self.messages("system"))

    def messages(self, role: str) -> list[dict[str, Any]]:
        return [m for m in (self.body or {}).get("messages") or [] if m.get("role") == role]

    def user_texts(self) -> list[str]:
        return [content_text(m.get("content")) for m in self.messages("user")]

    def tool_results(self) -> list[str]:
        return [content_text(m.get("content")) for m in self.messages("tool")]

    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in (self.body or {}).get("tools") or []]

    def text(self) -> str:
        """Every string in the body, joined: what an assertion searches."""
        return "\n".join(strings(self.body))


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


# How dsh's compaction asks for its summary (dsh-compaction-basic), as the last user message.
COMPACTION_PROMPT = "You are now acting as a compaction engine"


def is_main_request(body: Any) -> bool:
    """dsh's agent loop sends its tools; a title call sends none, a compaction says so."""
    if not isinstance(body, dict) or not body.get("tools"):
        return False
    users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
    return not (users and COMPACTION_PROMPT in content_text(users[-1].get("content")))


def is_compaction(body: Any) -> bool:
    return isinstance(body, dict) and bool(body.get("tools")) and not is_main_request(body)


@dataclass
class FakeDeepSeek:
    script: list[Turn] = field(default_factory=list)
    log: list[Logged] = field(default_factory=list)
    url: str = ""
    _ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _steps: int = 0
    # Called, with the number of main-loop replies given so far, before a
    # compaction summary is answered (a real model takes seconds there).
    on_compaction: Callable[[int], None] | None = None

    def main_requests(self) -> list[Logged]:
        with self._lock:
            return [r for r in self.log if r.is_main]

    def requests(self) -> list[Logged]:
        with self._lock:
            return list(self.log)

    def play(self, script: list[Turn]) -> None:
        """Answer the next main-loop requests from `script`, from its start."""
        with self._lock:
            self.script = list(script)
            self._steps = 0

    def compactions(self) -> list[Logged]:
        with self._lock:
            return [r for r in self.log if is_compaction(r.body)]

    def reply_for(self, body: dict[str, Any]) -> Text | ToolCall:
        if is_compaction(body):
            if self.on_compaction is not None:
                with self._lock:
                    steps = self._steps
                self.on_compaction(steps)
            return Text("## Goal\nThe task the user gave.\n## Progress\nSteps done so far.")
        if not is_main_request(body):
            return Text("A session")
        with self._lock:
            step = self._steps
            self._steps += 1
        turn = self.script[step] if step < len(self.script) else Text("Done.")
        return turn.decide(body) if isinstance(turn, Reply) else turn

    def record(self, logged: Logged) -> None:
        with self._lock:
            self.log.append(logged)

    def next_id(self) -> int:
        with self._lock:
            return next(self._ids)


def _chunks(turn: Text | ToolCall, n: int, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The reply as DeepSeek streams it: deltas, a finish chunk, a usage-only chunk."""
    base = {"id": f"chatcmpl-fake{n:06d}", "object": "chat.completion.chunk", "model": MODEL}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    if isinstance(turn, Text):
        yield chunk({"content": turn.text})
        yield chunk({}, "stop")
    else:
        if turn.text:
            yield chunk({"content": turn.text})
        call = {"index": 0, "id": f"call_fake{n:06d}", "type": "function"}
        yield chunk({"tool_calls": [{**call, "function": {"name": turn.name, "arguments": ""}}]})
        yield chunk(
            {"tool_calls": [{"index": 0, "function": {"arguments": json.dumps(turn.arguments)}}]}
        )
        yield chunk({}, "tool_calls")
    # Roughly four characters a token: dsh decides when to compact with it.
    prompt = max(1, len(json.dumps(body.get("messages", []))) // 4)
    usage = {"prompt_tokens": prompt, "completion_tokens": 12, "total_tokens": prompt + 12}
    yield {**base, "choices": [], "usage": usage}


class _Handler(BaseHTTPRequestHandler):
    model: FakeDeepSeek
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the log list is the record

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
        self.end_headers()
        self.wfile.write(data)

    def _handle(self) -> None:
        body = self._read_body() if self.command in ("POST", "PUT", "PATCH") else None
        path = self.path.split("?", 1)[0]
        self.model.record(Logged(self.command, self.path, dict(self.headers.items()), body))
        if self.command == "POST" and path.endswith("/chat/completions") and isinstance(body, dict):
            self._complete(body)
        elif self.command == "GET" and path.endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self._json(404, {"error": {"message": f"no {path} here", "type": "not_found"}})

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    def _complete(self, body: dict[str, Any]) -> None:
        n = self.model.next_id()
        try:
            turn = self.model.reply_for(body)
        except Exception as exc:  # a test's Reply that failed: said, not hung on
            turn = Text(f"FAKE-MODEL-ERROR {exc!r}")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for chunk in _chunks(turn, n, body):
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True


@contextmanager
def fake_deepseek(script: list[Turn] | None = None) -> Iterator[FakeDeepSeek]:
    """The fake API on a free loopback port, for the duration of the block."""
    model = FakeDeepSeek(script=list(script or []))
    handler = type("Handler", (_Handler,), {"model": model})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    model.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="fake-deepseek", daemon=True)
    thread.start()
    try:
        yield model
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    # By hand: `python -m tests.dsh.fake_deepseek`, then DEEPSEEK_BASE_URL=<printed url>.
    import sys
    import time

    with fake_deepseek([ToolCall("bash", {"command": "echo hi"}), Text("All done.")]) as m:
        print(m.url, file=sys.stderr)
        while True:
            time.sleep(3600)
            print(json.dumps([r.body for r in m.requests()])[:2000], file=sys.stderr)
