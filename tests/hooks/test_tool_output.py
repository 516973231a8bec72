"""The hook client's side of a cut tool output: what it reads, what it refuses.

Claude Code hands a PostToolUse hook only the first 30,000 characters of a
tool's stdout and names the file with all of it in
`tool_response.persistedOutputPath`. The client reads that file on the
agent's machine and sends it whole, or says why it could not.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from memflow_site.client import hook as hook_client
from memflow_site.client.hook import OUTPUT_FIELD, attach_output, encode_body

CAP = 64 * 1024


@pytest.fixture
def claude_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Claude Code's config dir, where it saves cut outputs (tool-results/)."""
    config = tmp_path / "claude-config"
    (config / "projects" / "p" / "s" / "tool-results").mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    return config / "projects" / "p" / "s" / "tool-results"


def payload(path: str, *, size: int | None = None, cwd: str = "/nonexistent-project") -> dict:
    response: dict = {"stdout": "preview", "stderr": "", "persistedOutputPath": path}
    if size is not None:
        response["persistedOutputSize"] = size
    return {
        "session_id": "s",
        "hook_event_name": "PostToolUse",
        "cwd": cwd,
        "tool_name": "Bash",
        "tool_response": response,
    }


def test_the_whole_output_is_sent_byte_for_byte(claude_dir: Path) -> None:
    data = "".join(f"line {i}\n" for i in range(5000)).encode()
    saved = claude_dir / "b1.txt"
    saved.write_bytes(data)
    body = payload(str(saved), size=len(data))
    attach_output(body, CAP)
    assert body[OUTPUT_FIELD] == {
        "source": "persistedOutputPath",
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "text": data.decode(),
    }
    assert body["tool_response"]["stdout"] == "preview"  # the harness's JSON is unchanged


def test_bytes_that_are_not_utf8_travel_as_base64(claude_dir: Path) -> None:
    data = b"\xff\xfe binary \x00 output\n"
    saved = claude_dir / "b2.txt"
    saved.write_bytes(data)
    body = payload(str(saved))
    attach_output(body, CAP)
    import base64

    assert base64.b64decode(body[OUTPUT_FIELD]["base64"]) == data
    assert "text" not in body[OUTPUT_FIELD]


def refused(body: dict, capsys: pytest.CaptureFixture[str]) -> str:
    attach_output(body, CAP)
    output = body[OUTPUT_FIELD]
    assert set(output) == {"source", "size", "refused"}
    # One line for the person; the reason also goes to the session log.
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and output["refused"] in err
    return str(output["refused"])


def test_a_missing_file_is_refused(claude_dir: Path, capsys) -> None:
    reason = refused(payload(str(claude_dir / "gone.txt"), size=99), capsys)
    assert reason.endswith("gone.txt does not exist")


def test_a_directory_is_refused(claude_dir: Path, capsys) -> None:
    assert refused(payload(str(claude_dir)), capsys).endswith("is a directory")


def test_a_relative_path_is_refused(claude_dir: Path, capsys) -> None:
    assert "is not an absolute path" in refused(payload("tool-results/x.txt"), capsys)


def test_a_link_out_of_claude_codes_directories_is_refused(claude_dir: Path, capsys) -> None:
    # What a planted link would reach: a file outside the project and temp dirs.
    link = claude_dir / "link.txt"
    link.symlink_to("/etc/passwd")
    reason = refused(payload(str(link)), capsys)
    assert "(a link to /etc/passwd)" in reason and "is outside the directories" in reason


def test_a_file_over_the_cap_is_refused_with_its_size(claude_dir: Path, capsys) -> None:
    saved = claude_dir / "big.txt"
    saved.write_bytes(b"x" * (CAP + 1))
    body = payload(str(saved), size=CAP + 1)
    reason = refused(body, capsys)
    assert reason.endswith(f"holds {CAP + 1:,} bytes, over MEMFLOW_HOOK_MAX_BYTES ({CAP:,})")
    assert body[OUTPUT_FIELD]["size"] == CAP + 1


def test_a_fifo_is_refused_without_blocking(claude_dir: Path, capsys) -> None:
    fifo = claude_dir / "fifo"
    os.mkfifo(fifo)
    assert refused(payload(str(fifo)), capsys).endswith("is not a regular file")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_file_is_refused(claude_dir: Path, capsys) -> None:
    saved = claude_dir / "locked.txt"
    saved.write_text("x")
    saved.chmod(0)
    assert "permission denied" in refused(payload(str(saved)), capsys)


def test_a_body_that_would_pass_the_cap_leaves_the_output_out(claude_dir: Path, capsys) -> None:
    data = b'"' * (CAP // 2 + 100)  # each quote is two bytes in JSON
    saved = claude_dir / "quotes.txt"
    saved.write_bytes(data)
    body = payload(str(saved))
    attach_output(body, CAP)
    encoded = encode_body(body, CAP)
    assert len(encoded) <= CAP
    sent = json.loads(encoded)[OUTPUT_FIELD]
    assert sent["size"] == len(data) and "over MEMFLOW_HOOK_MAX_BYTES" in sent["refused"]
    assert "MEMFLOW_HOOK_MAX_BYTES" in capsys.readouterr().err


def test_no_persisted_path_adds_nothing() -> None:
    body = {"tool_response": {"stdout": "short"}}
    attach_output(body, CAP)
    assert OUTPUT_FIELD not in body


# --- skipping a server that ran a hook out of time -------------------------------------------


def test_a_skip_lasts_its_while_and_names_one_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    until = hook_client.skip_for_a_while("http://a:1", "no answer within 1 s", 60)
    assert (hook_client.skipping("http://a:1") or {}).get("reason") == "no answer within 1 s"
    assert hook_client.skipping("http://b:1") is None  # another server is not skipped
    assert hook_client.skipping("http://a:1", now=until + 1) is None  # over
    assert hook_client.clear_skip("http://a:1") and hook_client.skipping("http://a:1") is None


def test_a_broken_state_file_skips_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    hook_client.state_path().parent.mkdir(parents=True)
    hook_client.state_path().write_text("{not json")
    assert hook_client.skipping("http://a:1") is None
