"""What `memflow hook` prints: the harness's own shape, naming the event that fired."""

from __future__ import annotations

import json

from memflow_site.client.hook import BY_CLAUDE_NAME, harness_output


def test_a_failed_tool_call_is_logged_as_post_tool_use_and_answered_in_its_own_name():
    assert BY_CLAUDE_NAME["PostToolUseFailure"] == "post-tool-use"
    printed = harness_output(
        "post-tool-use", {"additionalContext": "stored as ref abc"}, "PostToolUseFailure"
    )
    assert json.loads(printed) == {
        "hookSpecificOutput": {
            "hookEventName": "PostToolUseFailure",
            "additionalContext": "stored as ref abc",
        }
    }


def test_the_event_name_comes_from_memflow_when_the_harness_names_another():
    printed = harness_output("user-prompt", {"additionalContext": "x"}, "SessionStart")
    assert json.loads(printed)["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"


def test_events_claude_code_reads_no_context_from_print_nothing():
    assert harness_output("stop", {"additionalContext": "x"}) == ""
    assert harness_output("user-prompt", {"additionalContext": ""}) == ""
