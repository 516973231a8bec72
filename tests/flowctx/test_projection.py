"""flowctx's reversible tool-result projection: what a reader still sees.

Real outputs where the test can make them (a pytest run, a git diff, grep, gcc),
real-looking ones otherwise. No database.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contexts.flowctx.projection import Projection, detect_kind, estimate_tokens, project


def run(argv: list[str], cwd: Path) -> tuple[str, int]:
    """A command's output as a terminal shows it (stdout and stderr interleaved)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO")}
    done = subprocess.run(
        argv,
        cwd=cwd,
        env={**env, "COLUMNS": "120", "PYTHONDONTWRITEBYTECODE": "1", "LC_ALL": "C"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=120,
        check=False,
    )
    return done.stdout.decode("utf-8", errors="replace"), done.returncode


def projected(
    text: str,
    *,
    budget_tokens: int = 1000,
    tool_name: str | None = None,
    exit_code: int | None = None,
) -> Projection:
    result = project(text, budget_tokens=budget_tokens, tool_name=tool_name, exit_code=exit_code)
    assert result is not None, "expected a projection"
    assert result.projected_chars == len(result.text) < len(text) == result.original_chars
    return result


# --- token estimate ------------------------------------------------------------------------


def test_it_counts_ascii_as_a_quarter_token_each() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1.0
    assert estimate_tokens("x" * 4001) == 1000.25


def test_it_counts_cjk_as_one_and_a_half_and_astral_as_two() -> None:
    assert estimate_tokens("中文") == 3.0
    assert estimate_tokens("かな한글") == 6.0
    assert estimate_tokens("😀") == 2.0
    assert estimate_tokens("ab中😀") == 0.5 + 1.5 + 2.0
    # Other non-ASCII characters (accents, a lone surrogate) cost what ASCII does.
    assert estimate_tokens("é\ud800") == 0.5


def test_it_gives_cjk_output_fewer_characters_for_the_same_budget() -> None:
    chinese = "\n".join(f"第{i}行 构建日志中文内容说明" for i in range(800))
    result = projected(chinese, budget_tokens=1000)
    assert estimate_tokens(result.text) <= 1100
    # A line of 16 characters costs about 19 tokens: the budget buys under 1,000 characters
    # of this, where it buys 4,000 of ASCII.
    assert result.projected_chars < 1000


# --- within budget, abandoned --------------------------------------------------------------


def test_it_leaves_a_result_within_budget_alone() -> None:
    assert project("x" * 4000) is None  # exactly 1,000 tokens
    assert project("中" * 666) is None  # 999 tokens
    assert project("") is None
    assert project("x" * 4004) is not None


def test_it_abandons_a_cut_that_would_not_be_shorter() -> None:
    # Over a 10-token budget, but head + tail + an omission marker is longer than 41 chars.
    assert project("x" * 41, budget_tokens=10) is None
    assert project("short output", budget_tokens=0) is None


def error_lines(count: int) -> str:
    """A log where every line is a distinct error: all of it must stay."""
    return "\n".join(
        f"2024-05-01 12:00:{i % 60:02d} ERROR worker {chr(65 + i % 26)}{chr(65 + i // 26)} lost its lease"
        for i in range(count)
    )


def test_it_keeps_the_original_when_every_line_must_stay() -> None:
    text = error_lines(20)
    assert estimate_tokens(text) > 150
    assert project(text, budget_tokens=150) is None
    repeated = "\n".join([text] * 10)  # the same 20 errors ten times: nine tenths can go
    assert projected(repeated, budget_tokens=150).kind == "log"


def test_it_still_cuts_must_keep_lines_past_four_budgets() -> None:
    text = error_lines(400)
    result = projected(text, budget_tokens=150)
    assert estimate_tokens(result.text) <= 4 * 150
    assert "... omitted" in result.text


# --- test runs -----------------------------------------------------------------------------

FAILING_TESTS = """
    import pytest


    def parse(text):
        return int(text.replace(",", ""))


    def test_parse_plain():
        assert parse("12") == 12


    def test_parse_thousands():
        assert parse("1,200") == 1201


    def test_parse_decimal():
        assert parse("3.5") == 3.5


    @pytest.mark.parametrize("n", range(50))
    def test_parse_many(n):
        assert parse(str(n)) == (n + 1 if n % 5 == 0 else n)


    class TestReport:
        def test_lines(self):
            for step in range(150):
                print(f"step {step}: processed batch {step * 7} of 1050")
            assert [1, 2, 3] == [1, 2, 4]


    @pytest.mark.parametrize("n", range(120))
    def test_passing(n):
        assert parse(str(n)) == n
"""


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    root = tmp_path_factory.mktemp("failing")
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "test_parse.py").write_text(textwrap.dedent(FAILING_TESTS))
    pytest_argv = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider"]
    return run([*pytest_argv, "-p", "no:django", "-p", "no:randomly"], root)


def test_it_keeps_every_failing_test_id(failing_run: tuple[str, int]) -> None:
    text, exit_code = failing_run
    assert exit_code == 1
    failed = re.findall(r"^FAILED (\S+)", text, re.M)
    assert len(failed) == 13  # thousands, decimal, ten parametrized cases, the report
    result = projected(text, exit_code=exit_code, tool_name="Bash")
    assert result.kind == "test"
    for test_id in failed:
        assert f"FAILED {test_id}" in result.text
    assert result.projected_chars < 0.35 * len(text)


def test_it_keeps_assertion_lines_locations_and_the_summary(failing_run: tuple[str, int]) -> None:
    text, exit_code = failing_run
    result = projected(text, exit_code=exit_code)
    assertions = [line for line in text.splitlines() if line.startswith("E ")]
    locations = re.findall(r"^(test_parse\.py:\d+): ", text, re.M)
    summary = [line for line in text.splitlines() if re.fullmatch(r"=+ \d+ failed.* =+", line)]
    assert assertions and locations and summary
    for line in [*assertions, *summary]:
        assert line in result.text
    for location in locations:
        assert location in result.text
    # What it drops is what passed: the 120 PASSED lines and the printed steps.
    assert "test_passing[57] PASSED" not in result.text
    assert "step 77:" not in result.text


def test_it_reads_a_failing_run_as_a_test_run_not_as_code(failing_run: tuple[str, int]) -> None:
    text, _ = failing_run
    assert "    def test_parse_thousands():" in text  # a traceback shows source lines
    assert detect_kind(text) == "test"
    assert detect_kind(text, tool_name="Bash") == "test"


def test_it_sizes_the_windows_by_the_exit_code() -> None:
    output = "\n".join(f"row {i:04d} copied to the archive" for i in range(500))
    ok = projected(output, exit_code=0, tool_name="Bash").text
    failed = projected(output, exit_code=2, tool_name="Bash").text
    assert "row 0009" in ok and "row 0010" not in ok
    assert "row 0492" in ok and "row 0491" not in ok
    assert "row 0059" in failed and "row 0060" not in failed
    assert "row 0460" in failed and "row 0459" not in failed
    assert "... omitted 482 lines ..." in ok


# --- diffs ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def large_diff(tmp_path_factory: pytest.TempPathFactory) -> str:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path_factory.mktemp("repo")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "color.ui=never"]
    run([*git, "init", "-q"], root)
    for number in range(30):
        body = "\n".join(f"def handler_{number}_{i}(request):\n    return {i}\n" for i in range(40))
        (root / "app" / f"module_{number:02d}.py").parent.mkdir(exist_ok=True)
        (root / "app" / f"module_{number:02d}.py").write_text(body)
    run([*git, "add", "."], root)
    run([*git, "commit", "-q", "-m", "first"], root)
    for number in range(30):
        path = root / "app" / f"module_{number:02d}.py"
        path.write_text(path.read_text().replace("return 1", "return 1  # changed"))
        path.write_text(path.read_text().replace("return 2\n", "return 2\n\n\nEXTRA = 2\n"))
    text, exit_code = run([*git, "diff"], root)
    assert exit_code == 0
    return text


def test_it_keeps_every_changed_file_of_a_large_diff(large_diff: str) -> None:
    changed = re.findall(r"^diff --git a/\S+ b/(\S+)", large_diff, re.M)
    assert len(changed) == 30
    result = projected(large_diff)
    assert result.kind == "diff"
    for path in changed:
        assert path in result.text
    assert result.projected_chars < 0.2 * len(large_diff)


def test_it_shows_changed_lines_while_they_fit(large_diff: str) -> None:
    roomy = projected(large_diff, budget_tokens=len(large_diff) // 8).text
    assert "+EXTRA = 2" in roomy and "@@ " in roomy
    # Context lines go first: they are in the original, one retrieve away.
    assert "    return 3" not in roomy


# --- JSON ----------------------------------------------------------------------------------


def api_response(items: int) -> str:
    return json.dumps(
        {
            "count": items,
            "next": "https://api.example.com/v1/users?page=2",
            "previous": None,
            "results": [
                {
                    "id": 1000 + i,
                    "name": f"user {i}",
                    "email": f"user{i}@example.com",
                    "roles": ["reader", "editor"] if i % 2 else ["reader"],
                    "profile": {"city": "Lyon", "bio": "writes about databases " * 3},
                }
                for i in range(items)
            ],
        },
        indent=2,
    )


def test_it_summarises_a_long_json_array_with_keys_and_values() -> None:
    text = api_response(200)
    result = projected(text, tool_name="Bash")
    assert result.kind == "json"
    for key in ('"count"', '"next"', '"previous"', '"results"'):
        assert key in result.text
    # Representative values, not a shape without values.
    assert '"count": 200' in result.text
    assert '"name": "user 0"' in result.text and '"email": "user0@example.com"' in result.text
    assert '"id": 1199' in result.text  # the last item
    assert "more of 200 items: objects with keys id, name, email, roles, profile" in result.text
    assert result.projected_chars < 0.1 * len(text)


def test_it_shows_every_item_of_a_short_json_array() -> None:
    items = [{"id": f"job-{i}", "log": "step ok\n" * 200, "status": "failed"} for i in range(12)]
    text = json.dumps({"jobs": items})
    result = projected(text)
    for i in range(12):
        assert f'"id": "job-{i}"' in result.text
    assert "more of" not in result.text


# --- search results ------------------------------------------------------------------------


def test_it_keeps_the_distinct_paths_of_a_search(tmp_path: Path) -> None:
    for number in range(40):
        lines = [f"value_{i} = lookup('needle', {i})" for i in range(25)]
        (tmp_path / f"pkg{number % 4}").mkdir(exist_ok=True)
        (tmp_path / f"pkg{number % 4}" / f"mod_{number}.py").write_text("\n".join(lines))
    text, exit_code = run(["grep", "-rn", "needle", "."], tmp_path)
    assert exit_code == 0
    paths = set(re.findall(r"^([^:]+):\d+:", text, re.M))
    assert len(paths) == 40
    result = projected(text, tool_name="Bash", exit_code=exit_code)
    assert result.kind == "search"
    for path in paths:
        assert path in result.text
    assert "1000 hits in 40 files" in result.text
    assert result.projected_chars < 0.1 * len(text)


def test_it_reads_a_path_list_by_directory() -> None:
    paths = [f"/usr/share/doc/pkg{i // 30}/file {i}.txt" for i in range(600)]
    result = projected("\n".join(["/usr", "/usr/share", *paths]), tool_name="Bash")
    assert result.kind == "cli"
    for group in range(20):
        assert f"/usr/share/doc/pkg{group}/ (30)" in result.text


# --- logs ----------------------------------------------------------------------------------


def service_log(lines: int) -> str:
    out = []
    for i in range(lines):
        out.append(
            f"2024-05-01 12:{i // 60 % 60:02d}:{i % 60:02d} INFO GET /items/{i} 200 in {i % 97}ms"
        )
        if i % 500 == 250:
            out.append(f"2024-05-01 12:{i // 60 % 60:02d}:{i % 60:02d} WARNING slow query: {i}ms")
        if i == 3333:
            out.append("2024-05-01 13:00:00 ERROR payment gateway unreachable: connection refused")
    out.append("2024-05-01 14:00:00 INFO shutting down after 5000 requests")
    return "\n".join(out)


def test_it_collapses_a_repetitive_log_and_counts_the_repeats() -> None:
    text = service_log(5000)
    result = projected(text, tool_name="Bash")
    assert result.kind == "log"
    assert "INFO GET /items/0 200 in 0ms (\u00d75000)" in result.text
    assert "WARNING slow query: 250ms (\u00d710)" in result.text
    assert "ERROR payment gateway unreachable: connection refused" in result.text
    assert result.text.endswith("INFO shutting down after 5000 requests")
    assert result.projected_chars < 0.02 * len(text)


@pytest.fixture(scope="module")
def build_log(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    root = tmp_path_factory.mktemp("build")
    functions = [
        f"int f{i}(int a, int unused{i}) {{ int tmp{i}; unsigned u = {i}; if (a < u) return a; }}"
        for i in range(60)
    ]
    source = "\n".join(["#include <stdio.h>", *functions, "int main(void) { return nope; }"])
    (root / "gen.c").write_text(source)
    return run(["gcc", "-Wall", "-Wextra", "-c", "gen.c", "-o", "gen.o"], root)


def test_it_keeps_the_warnings_and_the_error_of_a_build_log(build_log: tuple[str, int]) -> None:
    text, exit_code = build_log
    assert exit_code != 0
    result = projected(text, exit_code=exit_code, tool_name="Bash")
    assert result.kind == "log"
    kinds = set(re.findall(r"(?:warning|error): ([^'\[]+)", text))
    assert len(kinds) >= 4  # unused variable, unused parameter, comparison, reaches end, undeclared
    for kind in kinds:
        assert kind in result.text
    assert "error: 'nope' undeclared" in result.text
    assert result.projected_chars < 0.3 * len(text)


# --- code and prose ------------------------------------------------------------------------


def test_it_outlines_source_code_with_line_numbers() -> None:
    import argparse

    source = Path(argparse.__file__).read_text()
    result = projected(source, tool_name="Bash")
    assert result.kind == "code"
    top = re.findall(r"^(?:class|def) (\w+)", source, re.M)
    for name in top:
        assert re.search(rf"\b(?:class|def) {name}\b", result.text)
    line = source[: source.index("class ArgumentParser(")].count("\n") + 1
    assert re.search(rf"^\s*{line}\s+class ArgumentParser", result.text, re.M)
    assert result.projected_chars < 0.1 * len(source)


def test_it_keeps_the_headings_of_a_markdown_document() -> None:
    sections = [f"## Section {i}\n\n" + "Some prose that explains things. " * 40 for i in range(12)]
    text = "# Title\n\n" + "\n\n".join(sections)
    result = projected(text, tool_name="Bash")
    assert result.kind == "text"
    for i in range(12):
        assert f"## Section {i}" in result.text


def test_it_cuts_unstructured_text_around_an_omission_marker() -> None:
    text = " ".join(f"word{i}" for i in range(4000))
    result = projected(text, budget_tokens=500)
    assert result.kind == "text"
    head, marker, tail = re.split(r"\n(\.\.\. omitted \d+ chars \.\.\.)\n", result.text)
    omitted = int(re.findall(r"\d+", marker)[0])
    assert text.startswith(head) and text.endswith(tail)
    assert len(head) + omitted + len(tail) == len(text)
    assert 0.5 < len(head) / (2000 * 0.6) <= 1.0 and 0.5 < len(tail) / (2000 * 0.3) <= 1.0


# --- budget, robustness, speed ------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: service_log(3000),
        lambda: api_response(300),
        lambda: "\n".join(f"src/m{i % 50}.py:{i}: found = needle({i})" for i in range(2000)),
        lambda: "\n".join(f"plain output line number {i}" for i in range(3000)),
        lambda: "lorem ipsum dolor " * 2000,
    ],
    ids=["log", "json", "search", "cli", "text"],
)
@pytest.mark.parametrize("budget", [250, 1000, 3000])
def test_it_roughly_respects_the_budget(make: Callable[[], str], budget: int) -> None:
    text = make()
    result = projected(text, budget_tokens=budget, tool_name="Bash")
    assert estimate_tokens(result.text) <= budget * 1.25


def test_it_copes_with_huge_lines_control_characters_and_surrogates() -> None:
    one_line = "x" * 2_000_000
    assert projected(one_line).projected_chars < 5000
    minified = json.dumps({"rows": [[i, str(i)] for i in range(100_000)]}, separators=(",", ":"))
    assert projected(minified).kind == "json"
    noisy = "".join(chr(i % 32) for i in range(20_000)) + "\ud800\udfff" * 1000
    assert projected(noisy).projected_chars < 5000
    deep = "[" * 100_000 + "]" * 100_000
    assert projected(deep).projected_chars < 5000


def _calls_to_project(text: str) -> int:
    """Python and C calls made projecting `text`: a count of work, the same on any machine."""
    calls = 0

    def count(frame: object, event: str, arg: object) -> None:
        nonlocal calls
        if event in ("call", "c_call"):
            calls += 1

    sys.setprofile(count)
    try:
        projected(text)
    finally:
        sys.setprofile(None)
    return calls


@pytest.mark.parametrize(
    "make",
    [
        service_log,
        lambda n: "\n".join(f"a/b{i % 300}.py:{i}:x = {i}" for i in range(n * 3)),
    ],
    ids=["log", "search"],
)
def test_projection_work_grows_linearly_with_the_output(make: Callable[[int], str]) -> None:
    # Speed is the bench's (`memflow bench projection`); this catches a projector
    # that turns quadratic: twice the output may cost about twice the calls, not four times.
    small, large = _calls_to_project(make(2_000)), _calls_to_project(make(4_000))
    assert large < 2.6 * small, (small, large)


FRAGMENTS = [
    "FAILED a.py::test_x - assert 1 == 2",
    "E       assert 1 == 2",
    "==== 1 failed, 2 passed in 0.1s ====",
    "diff --git a/x.py b/x.py",
    "--- a/x.py",
    "+++ b/x.py",
    "@@ -1,3 +1,4 @@",
    "+added line",
    "-removed line",
    "commit " + "a" * 40,
    "x.c:12:5: warning: unused variable",
    "src/a.py:3:needle",
    "2024-01-01 12:00:00 ERROR boom 42",
    "Traceback (most recent call last):",
    '  File "x.py", line 3, in f',
    "ValueError: bad",
    "def f(x):",
    "    class A:",
    "export default async function g() {",
    "/usr/lib/x/y",
    "contexts:",
    "total 8",
    "# Heading",
    "NAME",
    "Name: pkg",
    "{",
    '"key": [1, 2, 3],',
    "}",
    "",
    "中文😀\ud800\x00\r",
]
alphabet = st.characters(exclude_categories=()) | st.sampled_from(["\ud800", "\x00", "\r", "中"])
texts = st.one_of(
    st.text(alphabet),
    st.lists(st.sampled_from(FRAGMENTS) | st.text(alphabet, max_size=20)).map("\n".join),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(alphabet, max_size=30),
        lambda inner: st.lists(inner, max_size=30) | st.dictionaries(st.text(max_size=8), inner),
    ).map(json.dumps),
)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=texts,
    budget=st.integers(min_value=-5, max_value=300),
    tool_name=st.sampled_from([None, "Bash", "Grep", "Read", "pytest", ""]),
    exit_code=st.sampled_from([None, 0, 1, 2]),
)
def test_it_never_raises_and_never_returns_something_longer(
    caplog: pytest.LogCaptureFixture,
    text: str,
    budget: int,
    tool_name: str | None,
    exit_code: int | None,
) -> None:
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="contexts.flowctx.projection"):
        result = project(text, budget_tokens=budget, tool_name=tool_name, exit_code=exit_code)
        kind = detect_kind(text, tool_name=tool_name)
    assert kind in ("json", "diff", "code", "log", "search", "test", "cli", "text")
    if result is not None:
        assert len(result.text) < len(text)
        assert result.projected_chars == len(result.text)
        assert result.original_chars == len(text)
    # The guard in `project` must not have been what kept it from raising.
    assert not caplog.records


def test_an_iso_timestamped_log_is_a_log_not_search_results() -> None:
    log = "".join(
        f"2026-12-01T10:{m:02d}:{s:02d}Z INFO worker-{m % 3} processed batch {m * 60 + s}\n"
        for m in range(10)
        for s in range(0, 60, 2)
    )
    assert detect_kind(log) == "log"
    projected = project(log, budget_tokens=200)
    assert projected is not None
    assert "hits in" not in projected.text
