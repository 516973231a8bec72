"""The generator's pure parts: correction phrases, triggers, names, merging bodies."""

# Chinese text is typed with fullwidth punctuation; these strings keep it on purpose.
# ruff: noqa: RUF001

from __future__ import annotations

import pytest

from contexts.flowctx.notes import NoteEvent
from skills.generator import (
    Feedback,
    Trajectory,
    TriggerSettings,
    body_merge,
    body_with_feedback,
    correction_in,
    slug_name,
    turn_triggers,
)


@pytest.mark.parametrize(
    "text",
    [
        "No, use the staging database",
        "no. that breaks the build",
        "That's wrong — the config lives in pyproject.toml",
        "that is not right, revert it",
        "This is not what I asked for",
        "You shouldn't have deleted the migration",
        "Use ruff instead",
        "Actually, keep the old name",
        "I said the billing app, not the invoices app",
        "undo that change please",
        "不对，应该用 uv",
        "错了，配置文件在 pyproject.toml 里",
        "应该先跑迁移",
        "你应该先问我",
        "不要用 pip，换成 uv",
        "这不是我要的结果",
    ],
)
def test_corrections_are_recognised_in_english_and_chinese(text):
    assert correction_in(text)


@pytest.mark.parametrize(
    "text",
    [
        "No tests fail now, ship it",
        "What's wrong with the build?",
        "Add a note: no more than 5 retries",
        "Rename the function to normalise_path",
        "帮我把服务部署到测试环境",
        "请解释一下这个函数",
        "Install nothing new, just run the suite",
    ],
)
def test_ordinary_requests_are_not_corrections(text):
    assert correction_in(text) is None


def tool(command: str, *, failed: bool = False, name: str = "Bash") -> NoteEvent:
    return NoteEvent(
        kind="tool",
        turn=1,
        text="E   AssertionError: boom" if failed else "ok",
        tool_name=name,
        tool_input=command,
        failed=failed,
    )


def trajectory(*tools: NoteEvent, prompt: str = "do the thing", seconds: float = 10) -> Trajectory:
    return Trajectory(
        session="s",
        turn=1,
        prompt=prompt,
        previous_prompt="",
        tools=tools,
        assistant="",
        seconds=seconds,
    )


def kinds(t: Trajectory, **settings) -> list[str]:
    return [x.kind for x in turn_triggers(t, settings=TriggerSettings(**settings))]


def test_more_than_five_calls_trigger_but_five_do_not():
    assert kinds(trajectory(*[tool(f"make step{n}") for n in range(5)])) == []
    assert kinds(trajectory(*[tool(f"make step{n}") for n in range(6)])) == ["tool_calls"]


def test_a_failure_counts_as_fixed_only_when_the_same_program_later_works():
    assert kinds(trajectory(tool("pytest -q", failed=True), tool("ls"))) == []
    assert kinds(trajectory(tool("pytest -q", failed=True), tool("cd app && pytest -x"))) == [
        "error_fix"
    ]
    assert kinds(trajectory(tool("uv run pytest", failed=True), tool("pytest tests/"))) == [
        "error_fix"
    ]
    # A later success before the failure fixes nothing.
    assert kinds(trajectory(tool("pytest -q"), tool("pytest -q", failed=True))) == []


def test_long_turns_trigger_above_the_threshold_and_zero_switches_a_trigger_off():
    assert kinds(trajectory(seconds=180)) == []
    assert kinds(trajectory(seconds=181)) == ["long_turn"]
    assert kinds(trajectory(seconds=4000), seconds=0) == []
    assert kinds(trajectory(prompt="no, wrong file"), corrections=False) == []


def test_names_are_harness_slugs():
    assert slug_name("Fix the failing billing migration tests!") == (
        "fix-failing-billing-migration-tests"
    )
    assert (
        slug_name("部署到测试环境", extra=["docker compose", "manage"]) == "docker-compose-manage"
    )
    assert slug_name("部署").startswith("skill-")
    assert len(slug_name(" ".join(["supercalifragilistic"] * 10))) <= 64


def test_merging_bodies_adds_new_lines_and_sections_and_renumbers_steps():
    old = "# Release\n\n## Steps\n1. `uv build`\n2. `uv publish`\n\n## Pitfalls\n- token first"
    new = "## Steps\n1. `uv build`\n2. `twine check dist/*`\n\n## Outcome\nreleased"
    assert body_merge(old, new) == (
        "# Release\n\n## Steps\n1. `uv build`\n2. `uv publish`\n3. `twine check dist/*`\n\n"
        "## Pitfalls\n- token first\n\n## Outcome\nreleased"
    )
    assert body_merge(old, old) == old


def test_feedback_folds_into_lessons_without_repeating_itself():
    body = "## Steps\n1. go"
    once = body_with_feedback(
        body, [Feedback("failure", "needs a token"), Feedback("success", "ok")]
    )
    assert once == "## Steps\n1. go\n\n## Lessons from use\n- Pitfall: needs a token\n- Worked: ok"
    assert body_with_feedback(once, [Feedback("failure", "needs a token")]) == once
