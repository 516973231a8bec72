"""The LLM port: one OpenAI-compatible chat-completions client.

Handoff notes (and later skills) ask a model for text through `llm_complete`
and nothing else, so the server behind it (vLLM, llama.cpp, Ollama, a hosted
API) is a setting, not a dependency. Answers are streamed: a long answer
arrives piece by piece, so the read timeout bounds a stall between pieces
rather than the time the whole answer takes to generate.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx

logger = logging.getLogger(__name__)

# Waits between attempts: 0.5 s, 1 s, 2 s ... A caller is often a hook or a
# background fold, so a struggling server is given a moment, not minutes.
_BACKOFF_BASE = 0.5
_BACKOFF_CAP = 8.0
# A server's Retry-After is honoured up to this, for the same reason.
_RETRY_AFTER_CAP = 10.0
# Connecting is quick or it is not happening; a long read timeout (a model
# thinking) must not also mean waiting a minute for a dead host.
_CONNECT_TIMEOUT_CAP = 10.0
_ERROR_EXCERPT = 300


class LlmError(Exception):
    """The model gave no usable answer: unreachable, refused, timed out or malformed."""


@dataclass(frozen=True)
class LlmConfig:
    url: str
    model: str
    # Kept out of repr so a logged config never leaks the key.
    api_key: str = field(repr=False)
    timeout: float = 60.0
    retries: int = 2

    @classmethod
    def from_settings(cls) -> LlmConfig | None:
        """The configured model, or None when `MEMFLOW_LLM_URL` is empty (no LLM)."""
        from django.conf import settings

        url = str(getattr(settings, "MEMFLOW_LLM_URL", "") or "").strip()
        if not url:
            return None
        return cls(
            url=url,
            model=str(getattr(settings, "MEMFLOW_LLM_MODEL", "") or "").strip(),
            api_key=str(getattr(settings, "MEMFLOW_LLM_API_KEY", "") or "").strip(),
            timeout=float(getattr(settings, "MEMFLOW_LLM_TIMEOUT", 60.0)),
            retries=int(getattr(settings, "MEMFLOW_LLM_RETRIES", 2)),
        )

    @property
    def endpoint(self) -> str:
        """`{url}/chat/completions`; a URL that already names the endpoint is used as is."""
        base = self.url.rstrip("/")
        if base.endswith("/chat/completions"):
            return base
        return f"{base}/chat/completions"


class _Retryable(Exception):
    """An attempt failed in a way another attempt may not (network, 429, 5xx)."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class _Delivered:
    """Whether any piece of the answer already reached `on_delta`."""

    any: bool = False


def llm_complete(
    *,
    messages: list[dict[str, str]],
    config: LlmConfig,
    max_tokens: int | None = None,
    temperature: float = 0.0,
    on_delta: Callable[[str], None] | None = None,
) -> str:
    """The model's answer to `messages`, as one string.

    `on_delta` receives each piece as it arrives (once, with the whole answer,
    when the server does not stream). Connection errors, timeouts, 429 and 5xx
    are retried `config.retries` times with a short backoff; other 4xx are
    not. Raises LlmError when no answer can be had.
    """
    body: dict[str, Any] = {"messages": messages, "stream": True, "temperature": temperature}
    # Single-model servers (llama.cpp) accept a request without a model, so an
    # unset MEMFLOW_LLM_MODEL leaves the field out instead of sending "".
    if config.model:
        body["model"] = config.model
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    headers = {"Accept": "text/event-stream, application/json"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    timeout = httpx.Timeout(config.timeout, connect=min(config.timeout, _CONNECT_TIMEOUT_CAP))
    endpoint = config.endpoint
    attempts = max(0, config.retries) + 1
    delivered = _Delivered()
    failure = ""
    with httpx.Client(timeout=timeout, headers=headers) as client:
        for attempt in range(1, attempts + 1):
            try:
                return _attempt(
                    client=client,
                    endpoint=endpoint,
                    body=body,
                    timeout=config.timeout,
                    on_delta=on_delta,
                    delivered=delivered,
                )
            except _Retryable as exc:
                failure = str(exc)
                if delivered.any:
                    # The caller has already shown part of this answer; a retry
                    # would hand it a second, different beginning.
                    raise LlmError(
                        f"{endpoint}: the answer broke off part-way: {failure}"
                    ) from None
                if attempt == attempts:
                    break
                delay = min(_BACKOFF_BASE * 2 ** (attempt - 1), _BACKOFF_CAP)
                if exc.retry_after is not None:
                    delay = max(delay, min(exc.retry_after, _RETRY_AFTER_CAP))
                logger.warning(
                    "LLM request %d/%d to %s failed (%s); retrying in %.1f s",
                    attempt,
                    attempts,
                    endpoint,
                    failure,
                    delay,
                )
                time.sleep(delay)
    tries = "attempt" if attempts == 1 else "attempts"
    raise LlmError(f"{endpoint}: no answer after {attempts} {tries}: {failure}")


def _attempt(
    *,
    client: httpx.Client,
    endpoint: str,
    body: dict[str, Any],
    timeout: float,
    on_delta: Callable[[str], None] | None,
    delivered: _Delivered,
) -> str:
    try:
        with client.stream("POST", endpoint, json=body) as response:
            status = response.status_code
            if status == 429 or status >= 500:
                response.read()
                raise _Retryable(
                    f"HTTP {status}: {_error_text(response)}",
                    retry_after=_retry_after(response),
                )
            if status >= 300:
                response.read()
                raise LlmError(
                    f"{endpoint} refused the request (HTTP {status}): {_error_text(response)}"
                )
            if "text/event-stream" in response.headers.get("content-type", ""):
                return _read_stream(response.iter_lines(), on_delta=on_delta, delivered=delivered)
            raw = response.read().decode("utf-8", "replace")
    except httpx.TimeoutException as exc:
        raise _Retryable(f"timed out after {timeout:g} s ({type(exc).__name__})") from None
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        raise LlmError(f"{endpoint} is not a usable http(s) URL: {exc}") from None
    except httpx.TransportError as exc:
        raise _Retryable(f"cannot reach the server ({type(exc).__name__}: {exc})") from None
    except httpx.HTTPError as exc:
        raise LlmError(f"{endpoint}: {type(exc).__name__}: {exc}") from None
    # Some servers stream without saying so in Content-Type.
    if raw.lstrip().startswith("data:"):
        return _read_stream(raw.splitlines(), on_delta=on_delta, delivered=delivered)
    return _read_json(raw, on_delta=on_delta)


def _read_stream(
    lines: Iterable[str], *, on_delta: Callable[[str], None] | None, delivered: _Delivered
) -> str:
    parts: list[str] = []
    for line in lines:
        line = line.strip()
        # Blank lines end SSE events; `:` lines are keep-alive comments; `event:`
        # and `id:` lines carry nothing the answer needs.
        if not line.startswith("data:"):
            continue
        data = line[len("data:") :].strip()
        if data == "[DONE]":
            break
        try:
            chunk = json.loads(data)
        except ValueError:
            raise LlmError(
                f"the server streamed a chunk that is not JSON: {data[:120]!r}"
            ) from None
        if isinstance(chunk, dict) and chunk.get("error"):
            raise LlmError(f"the server reported an error mid-answer: {_describe(chunk['error'])}")
        piece = _chunk_text(chunk)
        if piece:
            parts.append(piece)
            if on_delta is not None:
                delivered.any = True
                on_delta(piece)
    text = "".join(parts)
    if not text.strip():
        raise LlmError("the model streamed an empty answer")
    return text


def _read_json(raw: str, *, on_delta: Callable[[str], None] | None) -> str:
    try:
        answer = json.loads(raw)
    except ValueError:
        raise LlmError(f"the server's answer is neither a stream nor JSON: {raw[:120]!r}") from None
    if isinstance(answer, dict) and answer.get("error"):
        raise LlmError(f"the server reported an error: {_describe(answer['error'])}")
    text = _chunk_text(answer)
    if not text.strip():
        raise LlmError(f"the server's answer holds no message text: {raw[:120]!r}")
    if on_delta is not None:
        on_delta(text)
    return text


def _chunk_text(chunk: Any) -> str:
    """The text in one stream chunk (`delta`) or one whole answer (`message`)."""
    if not isinstance(chunk, dict):
        return ""
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return ""
    first = choices[0]
    for key in ("delta", "message"):
        part = first.get(key)
        if isinstance(part, dict):
            return _content_text(part.get("content"))
    # Legacy completions servers answer chat requests with `text`.
    return first["text"] if isinstance(first.get("text"), str) else ""


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
        return "".join(
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


def _describe(error: Any) -> str:
    if isinstance(error, dict):
        for key in ("message", "detail", "error"):
            if isinstance(error.get(key), str):
                return error[key][:_ERROR_EXCERPT]
    return str(error)[:_ERROR_EXCERPT]


def _error_text(response: httpx.Response) -> str:
    text = response.text.strip()
    try:
        parsed = json.loads(text)
    except ValueError:
        return text[:_ERROR_EXCERPT] or response.reason_phrase
    if isinstance(parsed, dict):
        for key in ("error", "detail", "message"):
            if parsed.get(key):
                return _describe(parsed[key])
    return text[:_ERROR_EXCERPT]


def _retry_after(response: httpx.Response) -> float | None:
    try:
        seconds = float(response.headers.get("retry-after", ""))
    except ValueError:
        return None  # absent, or an HTTP date: the usual backoff will do
    return seconds if seconds >= 0 else None
