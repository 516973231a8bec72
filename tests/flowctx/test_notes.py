"""Engineer handoff notes from a realistic session log, with and without an LLM."""

from __future__ import annotations

import re
from typing import Any

import pytest

from contexts.flowctx.llm import LlmConfig, LlmError
from contexts.flowctx.notes import (
    SECTIONS,
    NoteEvent,
    note_build,
    note_events,
    note_extractive,
    note_llm,
    note_sections,
)
from tests.flowctx.chat_server import ChatServer, Reply, closed_port_url

SESSION_ID = "7f3a9b21-4c5d-4e8f-9a0b-1c2d3e4f5a6b"
PYTEST = "cd /work/app && python -m pytest tests/test_csv_reader.py -q"


def note_normalise(text: str) -> str:
    """`text` as a canonical note: the six `## SECTION` headings in order, `(none)` for
    an empty one (what a stored note looks like)."""
    return "\n\n".join(
        f"## {name}\n{body or '(none)'}" for name, body in note_sections(text).items()
    )


def bash(command: str, stdout: str, stderr: str = "") -> tuple[str, dict[str, Any]]:
    """A Bash call as Claude Code reports it: no exit code, just the streams."""
    response = {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False}
    return "post-tool-use", {
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command, "description": "run it"},
        "tool_response": response,
    }


def session_log() -> list[tuple[str, dict[str, Any]]]:
    """Two turns: a crash is diagnosed, a dead end is tried, the fix lands, lint is left."""
    return [
        ("session-start", {"session_id": "cc-1", "source": "startup"}),
        *diagnosing_turn(),
        *fixing_turn(),
        ("session-end", {"reason": "exit"}),
    ]


def diagnosing_turn() -> list[tuple[str, dict[str, Any]]]:
    """The crash is reported, the code read, the failing test run: its cause is named."""
    return [
        (
            "user-prompt",
            {
                "prompt": (
                    "The importer crashes on legacy CSV files. The bug report's session id is "
                    f"{SESSION_ID}; it started after commit 9c1e4b7a2f. "
                    "Look at parse_header in importer/csv_reader.py."
                )
            },
        ),
        (
            "post-tool-use",
            {
                "tool_name": "Read",
                "tool_input": {"file_path": "/work/app/importer/csv_reader.py"},
                "tool_response": {
                    "type": "text",
                    "file": {
                        "filePath": "/work/app/importer/csv_reader.py",
                        "content": "def parse_header(row):\n    return HeaderMap.resolve(row)\n",
                    },
                },
            },
        ),
        bash(
            PYTEST,
            "F.\n"
            "E       KeyError: 'legacy_id'\n"
            "importer/csv_reader.py:42: KeyError\n"
            "FAILED tests/test_csv_reader.py::test_legacy_header - KeyError: 'legacy_id'\n"
            "========================= 1 failed, 1 passed in 0.12s ==========================",
        ),
        bash("git log --oneline -2", "9c1e4b7 Read legacy headers\n1a2b3c4 Add CSV importer"),
        (
            "stop",
            {
                "last_assistant_message": (
                    "The KeyError comes from parse_header: HeaderMap.resolve() does not "
                    "know legacy_id."
                )
            },
        ),
    ]


def fixing_turn() -> list[tuple[str, dict[str, Any]]]:
    """A package that does not exist, the edit that fixes it, lint still failing."""
    return [
        ("user-prompt", {"prompt": "Fix it without changing the public API of HeaderMap."}),
        (
            "post-tool-use",
            {
                "tool_name": "Bash",
                "tool_input": {"command": "pip install legacy-csv-compat"},
                "tool_response": (
                    "Exit code 1\nERROR: Could not find a version that satisfies the "
                    "requirement legacy-csv-compat"
                ),
            },
        ),
        (
            "post-tool-use",
            {
                "tool_name": "Edit",
                "tool_input": {
                    "file_path": "/work/app/importer/csv_reader.py",
                    "old_string": "HeaderMap.resolve(row)",
                    "new_string": "HeaderMap.resolve(row, legacy=True)",
                },
                "tool_response": {"filePath": "/work/app/importer/csv_reader.py"},
            },
        ),
        bash(PYTEST, "..\n2 passed in 0.08s"),
        bash(
            "ruff check importer",
            "",
            "Traceback (most recent call last):\n"
            '  File "/work/app/importer/csv_reader.py", line 12, in <module>\n'
            "ImportError: cannot import name 'LegacyDialect'",
        ),
        (
            "stop",
            {
                "last_assistant_message": (
                    "The legacy tests pass now. ruff still fails on an import in "
                    "importer/csv_reader.py. Should I add a CHANGELOG.md entry as well?"
                )
            },
        ),
    ]


def section(note: str, name: str) -> str:
    return note_sections(note)[name]


@pytest.fixture
def note() -> str:
    return note_extractive(note_events(session_log()))


# --- reading the session log --------------------------------------------------------------------


def test_it_reads_prompts_tools_and_replies_turn_by_turn() -> None:
    events = note_events(session_log())
    assert [(e.kind, e.turn) for e in events] == [
        ("prompt", 1),
        ("tool", 1),
        ("tool", 1),
        ("tool", 1),
        ("assistant", 1),
        ("prompt", 2),
        ("tool", 2),
        ("tool", 2),
        ("tool", 2),
        ("tool", 2),
        ("assistant", 2),
    ]
    read, first_pytest = events[1], events[2]
    assert (read.tool_name, read.tool_input) == ("Read", "/work/app/importer/csv_reader.py")
    assert first_pytest.tool_input == PYTEST
    assert "KeyError: 'legacy_id'" in first_pytest.text


def test_it_tells_failed_calls_from_successful_ones_in_every_harness_shape() -> None:
    def tool(**payload: Any) -> bool:
        return note_events([("post-tool-use", {"tool_name": "Bash", **payload})])[0].failed

    # Claude Code: a failed Bash call is text, a failed pytest run says so in its summary.
    assert tool(tool_response="Exit code 2\nmake: *** [test] Error 2")
    assert tool(tool_response={"stdout": "==== 3 failed, 9 passed in 1.2s ====", "stderr": ""})
    assert tool(tool_response={"stdout": "", "stderr": "bash: pytset: command not found"})
    assert tool(hook_event_name="PostToolUseFailure", error="Permission denied")
    # dsh and others: explicit flags and exit codes.
    assert tool(exit_code=1, tool_response="boom")
    assert tool(tool_response={"output": "nope", "is_error": True})
    assert tool(tool_response={"stdout": "", "exitCode": "127"})
    assert not tool(exit_code=0, tool_response="Exit code 1 is what the docs say")
    assert not tool(tool_response={"stdout": "12 passed", "stderr": "", "interrupted": False})


def test_it_never_raises_on_odd_payloads() -> None:
    odd: list[Any] = [
        ("post-tool-use", None),
        ("post-tool-use", {"tool_response": [1, {"text": 2}], "tool_input": 7}),
        ("user-prompt", {"prompt": 42}),
        ("stop", {"message": {"role": "assistant", "content": [{"type": "text", "text": "Hi"}]}}),
        ("pre-compact", {"compaction": {"summary": "Earlier: renamed the module."}}),
        ("bogus",),
        5,
        ("stop", {"assistant": {"content": None}}),
    ]
    events = note_events(odd)
    assert [(e.kind, e.text) for e in events if e.kind != "tool"] == [
        ("assistant", "Hi"),
        ("note", "Earlier: renamed the module."),
    ]
    assert note_extractive(events).startswith("## TASK / GOAL")


# --- the extractive note ------------------------------------------------------------------------


def test_the_note_has_the_six_sections_in_order(note: str) -> None:
    assert re.findall(r"^## (.+)$", note, re.MULTILINE) == list(SECTIONS)


def test_the_goal_is_the_last_request_with_earlier_ones_listed(note: str) -> None:
    goal = section(note, "TASK / GOAL")
    assert goal.startswith("Fix it without changing the public API of HeaderMap.")
    assert "Earlier requests:\n- The importer crashes on legacy CSV files." in goal


def test_it_keeps_identifiers_verbatim(note: str) -> None:
    identifiers = section(note, "KEY IDENTIFIERS")
    for verbatim in (
        SESSION_ID,
        "9c1e4b7a2f",
        "1a2b3c4",
        "tests/test_csv_reader.py::test_legacy_header",
        "KeyError",
        "ImportError",
        "parse_header",
        "HeaderMap.resolve()",
        "legacy_id",
    ):
        assert f"`{verbatim}`" in identifiers, verbatim
    # git log's short form of the same commit is not listed a second time.
    assert "`9c1e4b7`" not in identifiers


def test_it_lists_files_with_what_happened_to_them(note: str) -> None:
    files = section(note, "FILE ARTIFACTS").splitlines()
    # The traceback's relative path is the same file as the one read and edited.
    assert files[0] == "- `/work/app/importer/csv_reader.py` — edited, read; lines 12, 42"
    assert "- `tests/test_csv_reader.py` — mentioned" in files
    assert "- `CHANGELOG.md` — mentioned" in files
    assert not any("`/work/app`" in line for line in files)  # `cd /work/app` is no artifact


def test_it_keeps_failed_commands_in_their_own_section(note: str) -> None:
    failed = section(note, "FAILED APPROACHES")
    working = section(note, "WORKING APPROACHES")
    assert (
        "- `pip install legacy-csv-compat` → ERROR: Could not find a version that satisfies "
        "the requirement legacy-csv-compat"
    ) in failed
    assert (
        f"- `{PYTEST}` → FAILED tests/test_csv_reader.py::test_legacy_header - "
        "KeyError: 'legacy_id' (fixed later)"
    ) in failed
    assert "pip install" not in working


def test_the_fix_goes_under_working_approaches(note: str) -> None:
    assert section(note, "WORKING APPROACHES").splitlines() == [
        "- Edited `/work/app/importer/csv_reader.py`",
        f"- `{PYTEST}` → 2 passed in 0.08s (worked after failing earlier)",
    ]


def test_unfixed_errors_and_the_last_question_are_the_open_state(note: str) -> None:
    assert section(note, "OPEN STATE").splitlines() == [
        "- Unresolved: `pip install legacy-csv-compat` → ERROR: Could not find a version "
        "that satisfies the requirement legacy-csv-compat",
        "- Unresolved: `ruff check importer` → ImportError: cannot import name 'LegacyDialect'",
        "- Where it stopped: The legacy tests pass now.",
        "- Open question: Should I add a CHANGELOG.md entry as well?",
    ]


def test_empty_sections_say_none() -> None:
    note = note_extractive(note_events([("user-prompt", {"prompt": "Explain the CSV format"})]))
    assert note == (
        "## TASK / GOAL\nExplain the CSV format\n\n"
        "## WORKING APPROACHES\n(none)\n\n"
        "## FAILED APPROACHES\n(none)\n\n"
        "## KEY IDENTIFIERS\n(none)\n\n"
        "## FILE ARTIFACTS\n(none)\n\n"
        "## OPEN STATE\n(none)"
    )


def test_it_is_deterministic(note: str) -> None:
    assert note_extractive(note_events(session_log())) == note
    assert note_normalise(note) == note


def test_it_merges_a_prior_note_without_repeating_lines(note: str) -> None:
    later: list[tuple[str, dict[str, Any]]] = [
        ("pre-compact", {"summary": note}),
        ("user-prompt", {"prompt": "Now fix the ruff failure and add the changelog entry"}),
        (
            "post-tool-use",
            {
                "tool_name": "Edit",
                "tool_input": {"file_path": "/work/app/importer/csv_reader.py"},
                "tool_response": "ok",
            },
        ),
        bash("ruff check importer", "All checks passed!"),
        bash(PYTEST, "..\n2 passed in 0.07s"),
        (
            "post-tool-use",
            {
                "tool_name": "Write",
                "tool_input": {"file_path": "CHANGELOG.md"},
                "tool_response": "",
            },
        ),
        ("stop", {"last_assistant_message": f"Done; still tied to session {SESSION_ID}."}),
    ]
    merged = note_extractive(note_events(later))
    lines = [line for line in merged.splitlines() if line.strip()]
    assert len(lines) == len(set(lines)), "a line is repeated"
    assert section(merged, "KEY IDENTIFIERS").count(SESSION_ID) == 1
    goal = section(merged, "TASK / GOAL")
    assert goal.startswith("Now fix the ruff failure and add the changelog entry")
    assert "- Fix it without changing the public API of HeaderMap." in goal
    assert "- The importer crashes on legacy CSV files." in goal
    # What the prior note knew survives; what this span settled is updated.
    failed = section(merged, "FAILED APPROACHES")
    assert "pip install legacy-csv-compat" in failed
    assert (
        "`ruff check importer` → ImportError: cannot import name 'LegacyDialect' (fixed later)"
        in failed
    )
    assert "- `/work/app/importer/csv_reader.py` — edited, read" in merged
    assert "- `CHANGELOG.md` — created" in merged
    open_state = section(merged, "OPEN STATE")
    assert "ruff check importer" not in open_state  # it passes now
    assert "Should I add a CHANGELOG.md entry" not in open_state  # the user answered
    assert "- Unresolved: `pip install legacy-csv-compat`" in open_state


def test_a_free_form_compaction_summary_is_kept_as_context() -> None:
    events = note_events(
        [
            ("pre-compact", {"summary": "We moved parsing into HeaderMap in commit 4be2f1a9c."}),
            ("user-prompt", {"prompt": "Carry on with the legacy importer"}),
        ]
    )
    note = note_extractive(events)
    assert "Earlier summary: We moved parsing into HeaderMap in commit 4be2f1a9c." in note
    assert "`4be2f1a9c`" in section(note, "KEY IDENTIFIERS")


def test_a_note_injected_earlier_in_the_session_counts_as_a_prior_note(note: str) -> None:
    injected = {"event": "user-prompt", "blocks": [{"name": "flowctx:note", "text": note}]}
    events = note_events([("injection", injected), ("user-prompt", {"prompt": "Carry on please"})])
    assert [e.kind for e in events] == ["note", "prompt"]
    assert "`9c1e4b7a2f`" in section(note_extractive(events), "KEY IDENTIFIERS")


def test_a_long_session_folds_into_a_bounded_note() -> None:
    log: list[tuple[str, dict[str, Any]]] = []
    for turn in range(40):
        log.append(("user-prompt", {"prompt": f"Step {turn}: make export_case_{turn}() work"}))
        for k in range(6):
            output = "\n".join(f"src/pkg_{turn}/mod_{k}.py:{i}: value_{i} = {i}" for i in range(60))
            log.append(bash(f"python -m pytest tests/test_{turn}_{k}.py", output + "\n1 failed"))
            log.append(bash(f"python tools/fix_{turn}_{k}.py --apply", output + "\nDone"))
    note = note_extractive(note_events(log))
    assert len(note) <= 4_000
    assert all(len(body.splitlines()) <= 15 for body in note_sections(note).values())
    # The newest work is what stays when lines must go.
    assert "Step 39: make export_case_39() work" in note
    assert "`python tools/fix_39_5.py --apply` → Done" in note


# --- reading notes ------------------------------------------------------------------------------


def test_normalising_makes_a_loose_note_canonical() -> None:
    loose = (
        "Here is the handoff note you asked for:\n\n"
        "**TASK / GOAL**\nShip the legacy importer\n\n"
        "### working approaches:\n- pinned `HeaderMap`\n\n"
        "## FAILED APPROACHES\nNone\n\n"
        "## KEY IDENTIFIERS (verbatim)\n- `9c1e4b7a2f`\n\n"
        "## OPEN STATE\n```\n# still failing\nruff check\n```\n"
    )
    assert note_normalise(loose) == (
        "## TASK / GOAL\nShip the legacy importer\n\n"
        "## WORKING APPROACHES\n- pinned `HeaderMap`\n\n"
        "## FAILED APPROACHES\n(none)\n\n"
        "## KEY IDENTIFIERS\n- `9c1e4b7a2f`\n\n"
        "## FILE ARTIFACTS\n(none)\n\n"
        "## OPEN STATE\n```\n# still failing\nruff check\n```"
    )
    assert note_sections(loose)["FILE ARTIFACTS"] == ""


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "no handoff-note sections"),
        ("Lorem ipsum dolor sit amet.", "no handoff-note sections"),
        ("## TASK / GOAL\na\n## TASK / GOAL\nb", "appears twice"),
        ("## TASK / GOAL\na\n## NEXT STEPS\nb", "unexpected heading '## NEXT STEPS'"),
    ],
)
def test_normalising_refuses_text_that_is_not_a_note(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        note_normalise(text)


# --- the LLM note -------------------------------------------------------------------------------

LLM_NOTE = """Sure, here is the note.

## TASK / GOAL
Make the importer read legacy CSV headers without changing HeaderMap's public API.
## WORKING APPROACHES
- Passing `legacy=True` to `HeaderMap.resolve()` in importer/csv_reader.py; tests pass.
## FAILED APPROACHES
- `pip install legacy-csv-compat`: no such package.
## KEY IDENTIFIERS
- `7f3a9b21-4c5d-4e8f-9a0b-1c2d3e4f5a6b`, `9c1e4b7a2f`, `parse_header`
## FILE ARTIFACTS
- `/work/app/importer/csv_reader.py` (edited)
## OPEN STATE
none
"""


def events() -> list[NoteEvent]:
    return note_events(session_log())


def chunks(text: str, size: int = 40) -> tuple[str, ...]:
    return tuple(text[i : i + size] for i in range(0, len(text), size))


def test_with_an_llm_the_note_is_the_models_note_made_canonical() -> None:
    with ChatServer([Reply(chunks=chunks(LLM_NOTE))]) as server:
        note, source = note_build(events(), config=server.config())
    assert source == "llm"
    assert note == note_normalise(LLM_NOTE)
    assert note.startswith("## TASK / GOAL\nMake the importer read legacy CSV headers")
    assert section(note, "OPEN STATE") == ""
    (seen,) = server.seen
    system, user = seen.body["messages"]
    assert all(f"## {name}" in system["content"] for name in SECTIONS)
    # The model sees the session itself and the extractive draft.
    assert "pip install legacy-csv-compat" in user["content"]
    assert "MECHANICAL DRAFT" in user["content"]


def test_an_llm_answer_that_is_not_a_note_gets_one_repair() -> None:
    replies = [Reply(content="I could not decide."), Reply(chunks=chunks(LLM_NOTE))]
    with ChatServer(replies) as server:
        note = note_llm(events(), config=server.config())
    assert note == note_normalise(LLM_NOTE)
    assert len(server.seen) == 2
    repair = server.seen[1].body["messages"]
    assert repair[-2] == {"role": "assistant", "content": "I could not decide."}
    assert "no handoff-note sections found" in repair[-1]["content"]


def test_a_note_missing_sections_is_not_accepted_from_the_llm() -> None:
    partial = "## TASK / GOAL\nShip it\n## OPEN STATE\n- lint"
    with (
        ChatServer([Reply(content=partial)]) as server,
        pytest.raises(LlmError, match="sections missing: WORKING APPROACHES"),
    ):
        note_llm(events(), config=server.config())
    assert len(server.seen) == 2


def test_it_falls_back_to_the_extractive_note_when_the_llm_answers_garbage() -> None:
    with ChatServer([Reply(chunks=("lorem ", "ipsum"))]) as server:
        note, source = note_build(events(), config=server.config())
    assert (note, source) == (note_extractive(events()), "extractive")
    assert len(server.seen) == 2  # the answer and the one repair


def test_it_falls_back_to_the_extractive_note_when_the_llm_is_down() -> None:
    config = LlmConfig(url=closed_port_url(), model="m", api_key="", retries=0)
    assert note_build(events(), config=config) == (note_extractive(events()), "extractive")


def test_without_an_llm_the_note_is_extractive() -> None:
    assert note_build(events(), config=None) == (note_extractive(events()), "extractive")
