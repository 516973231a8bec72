"""The LLM port against a real OpenAI-compatible server on loopback (tests/flowctx/chat_server.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contexts.flowctx.llm import LlmConfig, LlmError, llm_complete
from tests.flowctx.chat_server import ChatServer, Reply, closed_port_url

HELLO = [{"role": "user", "content": "Say hello"}]


def test_it_joins_streamed_pieces_and_hands_each_to_on_delta() -> None:
    pieces: list[str] = []
    with ChatServer([Reply(chunks=("Hel", "lo, ", "world"))]) as server:
        answer = llm_complete(messages=HELLO, config=server.config(), on_delta=pieces.append)
    assert answer == "Hello, world"
    assert pieces == ["Hel", "lo, ", "world"]


def test_it_sends_the_key_the_model_and_asks_for_a_stream() -> None:
    with ChatServer([Reply(chunks=("ok",))]) as server:
        llm_complete(messages=HELLO, config=server.config(), max_tokens=64, temperature=0.2)
    (seen,) = server.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["Authorization"] == "Bearer sk-local"
    assert seen.body["model"] == "qwen-test"
    assert seen.body["messages"] == HELLO
    assert seen.body["stream"] is True
    assert seen.body["max_tokens"] == 64
    assert seen.body["temperature"] == 0.2


def test_it_accepts_a_plain_json_answer_from_a_server_that_ignores_stream() -> None:
    pieces: list[str] = []
    with ChatServer([Reply(content="A whole answer")]) as server:
        answer = llm_complete(messages=HELLO, config=server.config(), on_delta=pieces.append)
    assert answer == "A whole answer"
    assert pieces == ["A whole answer"]


def test_it_retries_after_a_503_and_returns_the_next_answer() -> None:
    with ChatServer(
        [Reply(status=503, body="overloaded"), Reply(chunks=("second ", "try"))]
    ) as server:
        answer = llm_complete(messages=HELLO, config=server.config(retries=2))
    assert answer == "second try"
    assert len(server.seen) == 2


def test_it_gives_up_on_a_400_without_retrying() -> None:
    refusal = json.dumps({"error": {"message": "messages must not be empty"}})
    with (
        ChatServer([Reply(status=400, body=refusal)]) as server,
        pytest.raises(LlmError, match=r"HTTP 400.*messages must not be empty"),
    ):
        llm_complete(messages=HELLO, config=server.config(retries=3))
    assert len(server.seen) == 1


def test_it_reports_the_last_failure_once_retries_run_out() -> None:
    with (
        ChatServer([Reply(status=500, body="boom")]) as server,
        pytest.raises(LlmError, match=r"no answer after 2 attempts: HTTP 500: boom"),
    ):
        llm_complete(messages=HELLO, config=server.config(retries=1))
    assert len(server.seen) == 2


def test_a_stalled_server_becomes_an_error_within_the_timeout() -> None:
    # Without the timeout the 30 s reply would arrive and no error be raised.
    with (
        ChatServer([Reply(chunks=("late",), delay=30)]) as server,
        pytest.raises(LlmError, match="timed out"),
    ):
        llm_complete(messages=HELLO, config=server.config(timeout=0.3, retries=1))
    assert len(server.seen) == 2


def test_an_unreachable_server_becomes_an_error() -> None:
    config = LlmConfig(url=closed_port_url(), model="m", api_key="", retries=1)
    with pytest.raises(LlmError, match="cannot reach the server"):
        llm_complete(messages=HELLO, config=config)


def test_an_empty_answer_is_an_error_not_an_empty_string() -> None:
    with ChatServer([Reply(content="")]) as server, pytest.raises(LlmError, match="no message"):
        llm_complete(messages=HELLO, config=server.config())


def test_there_is_no_llm_when_the_url_setting_is_empty(settings: Any) -> None:
    settings.MEMFLOW_LLM_URL = ""
    assert LlmConfig.from_settings() is None


def test_the_config_comes_from_the_llm_settings(settings: Any) -> None:
    settings.MEMFLOW_LLM_URL = "http://127.0.0.1:8000/v1/"
    settings.MEMFLOW_LLM_MODEL = "qwen2.5-coder"
    settings.MEMFLOW_LLM_API_KEY = "sk-secret"
    settings.MEMFLOW_LLM_TIMEOUT = 12
    settings.MEMFLOW_LLM_RETRIES = 0
    config = LlmConfig.from_settings()
    assert config == LlmConfig(
        url="http://127.0.0.1:8000/v1/",
        model="qwen2.5-coder",
        api_key="sk-secret",
        timeout=12.0,
        retries=0,
    )
    assert config.endpoint == "http://127.0.0.1:8000/v1/chat/completions"
    assert "sk-secret" not in repr(config)
