"""A corpus of real tool outputs for the projection bench, made on this machine.

Every sample is the output of a command run here and now: pytest and unittest
runs of a small project generated in `workdir` (failing and passing), read-only
git commands over the memflow repository, pip, dpkg, grep, ls, man, a gcc/make
build and a compileall run with errors, logs written by a real program using
`logging`, and source files read with `cat`. A command missing on this machine
skips its sample with a note. No command prints the environment.

`must_keep` lists what a reader must still see after projection. The rules
below derive it from each output on their own, without looking at how
`projection` works (they are what a person fixing the problem would need
next). A string survives when it occurs verbatim in the projected text.
Lines are compared by their first 160 characters (120 for assertion text),
since a projection may clip a very long line but not a short one.

Logs: lines that are identical once digits are blanked collapse into one
shown line with a count, so "every warning and error survives" means: for
each distinct warning or error line *template* (digits blanked), its first
occurrence is shown verbatim. The count of the rest is shown next to it; the
individual numbers are one retrieve away.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SITE_PACKAGES = Path(sysconfig.get_paths()["purelib"])
MIN_CHARS = 4000  # the default budget (1000 tokens) in ASCII characters: smaller is not projected


@dataclass
class Sample:
    name: str
    kind: str  # what the output is, as a careful reader would call it (one of projection.KINDS)
    command: str
    text: str
    exit_code: int
    must_keep: list[str] = field(default_factory=list)


Rule = Callable[[str], list[str]]


def build_corpus(*, workdir: Path, progress: Callable[[str], None] | None = None) -> list[Sample]:
    """Runs every command of the corpus; returns the samples over the default budget."""
    say = progress or (lambda message: None)
    workdir.mkdir(parents=True, exist_ok=True)
    _write_pytest_project(workdir / "proj")
    _write_build_project(workdir / "build")
    _write_compile_tree(workdir / "compile")
    _write_log_program(workdir / "logs")
    samples: list[Sample] = []
    for spec in _specs(workdir):
        result = _run(spec.argv, cwd=spec.cwd)
        if result is None:
            say(f"  skipped {spec.name}: `{spec.argv[0]}` is missing or timed out")
            continue
        text, exit_code = result
        if len(text) <= MIN_CHARS:
            say(f"  skipped {spec.name}: {len(text):,} chars, within the default budget")
            continue
        try:
            must_keep = _dedupe(spec.rule(text))
        except ValueError as exc:  # e.g. a JSON command that printed an error instead
            say(f"  skipped {spec.name}: its output is not what the rule reads ({exc})")
            continue
        command = " ".join(spec.argv)
        samples.append(Sample(spec.name, spec.kind, command, text, exit_code, must_keep))
        say(f"  {spec.name}: {len(text):,} chars, {len(samples[-1].must_keep)} must-keep")
    return samples


# --- running commands ----------------------------------------------------------------------


@dataclass
class _Spec:
    name: str
    kind: str
    argv: list[str]
    rule: Rule
    cwd: Path = REPO


def _run(argv: list[str], *, cwd: Path, timeout: float = 120) -> tuple[str, int] | None:
    """(stdout and stderr interleaved as a terminal shows them, exit code), None when
    the command is missing or hangs."""
    if shutil.which(argv[0]) is None and not Path(argv[0]).exists():
        return None
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=_environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.decode("utf-8", errors="replace"), done.returncode


def _environment() -> dict[str, str]:
    """A bare environment: outputs must not depend on (or show) the caller's variables."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": str(Path.home()),
        "GIT_PAGER": "cat",
        "MANPAGER": "cat",
        "PAGER": "cat",
        "MANWIDTH": "80",
        "COLUMNS": "120",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "PIP_NO_INPUT": "1",
    }


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(item for item in items if item.strip()))


# --- the samples ---------------------------------------------------------------------------


def _specs(workdir: Path) -> list[_Spec]:
    return [
        *_test_specs(workdir),
        *_git_specs(),
        *_search_specs(),
        *_json_specs(),
        *_cli_specs(),
        *_build_and_log_specs(workdir),
        *_code_and_text_specs(),
    ]


def _test_specs(workdir: Path) -> list[_Spec]:
    project = workdir / "proj"
    pytest = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:django"]
    calc = ["test_calc.py", "test_many.py"]
    return [
        _Spec("pytest failing", "test", [*pytest, *calc], _pytest_rule, project),
        _Spec("pytest -v failing", "test", [*pytest, "-v", *calc], _pytest_rule, project),
        _Spec(
            "pytest -q --tb=short",
            "test",
            [*pytest, "-q", "--tb=short", *calc],
            _pytest_rule,
            project,
        ),
        _Spec(
            "pytest --tb=long -rA",
            "test",
            [*pytest, "--tb=long", "-rA", "test_calc.py"],
            _pytest_rule,
            project,
        ),
        _Spec(
            "pytest -vv failing calc",
            "test",
            [*pytest, "-vv", "test_calc.py"],
            _pytest_rule,
            project,
        ),
        _Spec("pytest -l locals", "test", [*pytest, "-l", "test_calc.py"], _pytest_rule, project),
        _Spec(
            "pytest continue on collection errors",
            "test",
            [*pytest, "-v", "--continue-on-collection-errors", *calc, "test_broken.py"],
            _pytest_rule,
            project,
        ),
        _Spec(
            "pytest -v all passing", "test", [*pytest, "-v", "test_many.py"], _pytest_rule, project
        ),
        _Spec(
            "pytest -rA all passing",
            "test",
            [*pytest, "-rA", "test_many.py"],
            _pytest_rule,
            project,
        ),
        _Spec(
            "unittest -v failing",
            "test",
            [sys.executable, "-m", "unittest", "-v", "test_unit"],
            _unittest_rule,
            project,
        ),
    ]


def _git_specs() -> list[_Spec]:
    git = ["git", "--no-pager", "-c", "color.ui=never", "-c", "core.quotepath=off"]
    return [
        _Spec("git log -p", "diff", [*git, "log", "-p"], _diff_rule),
        _Spec("git log -p -n 3", "diff", [*git, "log", "-p", "-n", "3"], _diff_rule),
        _Spec(
            "git log -p -n 6 -- memories",
            "diff",
            [*git, "log", "-p", "-n", "6", "--", "memories"],
            _diff_rule,
        ),
        _Spec("git show HEAD", "diff", [*git, "show", "HEAD"], _diff_rule),
        _Spec("git show HEAD~5", "diff", [*git, "show", "HEAD~5"], _diff_rule),
        _Spec("git show HEAD~8", "diff", [*git, "show", "HEAD~8"], _diff_rule),
        _Spec("git diff HEAD~3", "diff", [*git, "diff", "HEAD~3", "HEAD"], _diff_rule),
        _Spec("git diff HEAD~7 HEAD~4", "diff", [*git, "diff", "HEAD~7", "HEAD~4"], _diff_rule),
        _Spec("git diff -U10 HEAD~2", "diff", [*git, "diff", "-U10", "HEAD~2", "HEAD"], _diff_rule),
        _Spec("git log", "diff", [*git, "log"], _diff_rule),
        _Spec("git log --stat", "diff", [*git, "log", "--stat"], _diff_rule),
    ]


def _search_specs() -> list[_Spec]:
    git_grep = ["git", "--no-pager", "grep", "-n", "--no-color"]
    django = str(SITE_PACKAGES / "django" / "db")
    drf = str(SITE_PACKAGES / "rest_framework")
    return [
        _Spec("git grep def", "search", [*git_grep, "def "], _search_rule),
        _Spec("git grep workspace", "search", [*git_grep, "workspace"], _search_rule),
        _Spec("git grep -i error", "search", [*git_grep, "-i", "error"], _search_rule),
        _Spec(
            "grep -rn import memories",
            "search",
            ["grep", "-rn", "--include=*.py", "import", "memories"],
            _search_rule,
        ),
        _Spec(
            "grep -rn -C2 raise",
            "search",
            ["grep", "-rn", "-C2", "--include=*.py", "raise ", "contexts"],
            _search_rule,
        ),
        _Spec(
            "grep -rn self django/db",
            "search",
            ["grep", "-rn", "--include=*.py", "self\\.", django],
            _search_rule,
        ),
        _Spec(
            "grep -rn 'def ' rest_framework",
            "search",
            ["grep", "-rn", "--include=*.py", "def ", drf],
            _search_rule,
        ),
    ]


def _json_specs() -> list[_Spec]:
    pip = [sys.executable, "-m", "pip"]
    iso = Path("/usr/share/iso-codes/json")
    return [
        _Spec("pip list --format json", "json", [*pip, "list", "--format", "json"], _json_rule),
        _Spec("pip inspect", "json", [*pip, "inspect"], _json_rule),
        _Spec("iso 3166-1 json", "json", ["cat", str(iso / "iso_3166-1.json")], _json_rule),
        _Spec("iso 639-3 json", "json", ["cat", str(iso / "iso_639-3.json")], _json_rule),
        _Spec("jq iso 4217", "json", ["jq", ".", str(iso / "iso_4217.json")], _json_rule),
        _Spec(
            "jq -c iso 3166-2", "json", ["jq", "-c", ".", str(iso / "iso_3166-2.json")], _json_rule
        ),
        _Spec(
            "node process.config",
            "json",
            ["node", "-p", "JSON.stringify(process.config, null, 2)"],
            _json_rule,
        ),
    ]


def _cli_specs() -> list[_Spec]:
    pip = [sys.executable, "-m", "pip"]
    return [
        _Spec("dpkg -l", "cli", ["dpkg", "-l"], _dpkg_list_rule),
        _Spec("dpkg -L nodejs", "cli", ["dpkg", "-L", "nodejs"], _path_list_rule),
        _Spec("dpkg -L cmake-data", "cli", ["dpkg", "-L", "cmake-data"], _path_list_rule),
        _Spec("dpkg -L tzdata", "cli", ["dpkg", "-L", "tzdata"], _path_list_rule),
        _Spec("dpkg -L python3-pip", "cli", ["dpkg", "-L", "python3-pip"], _path_list_rule),
        _Spec("git ls-files", "cli", ["git", "ls-files"], _path_list_rule),
        _Spec("pip show -f django", "cli", [*pip, "show", "-f", "django"], _pip_show_rule),
        _Spec("pip show -f hypothesis", "cli", [*pip, "show", "-f", "hypothesis"], _pip_show_rule),
        _Spec(
            "ls -laR repo",
            "cli",
            ["ls", "-laR", "contexts", "memories", "tests"],
            _ls_recursive_rule,
        ),
        _Spec(
            "ls -laR rest_framework",
            "cli",
            ["ls", "-laR", str(SITE_PACKAGES / "rest_framework")],
            _ls_recursive_rule,
        ),
        _Spec("ls -la /usr/bin", "cli", ["ls", "-la", "/usr/bin"], _generic_cli_rule),
    ]


def _build_and_log_specs(workdir: Path) -> list[_Spec]:
    build, logs = workdir / "build", workdir / "logs"
    python = sys.executable
    return [
        _Spec(
            "gcc -Wall -Wextra",
            "log",
            ["gcc", "-Wall", "-Wextra", "-c", "gen.c", "-o", "gen.o"],
            _build_rule,
            build,
        ),
        _Spec("make -k", "log", ["make", "-k", "-B", "--no-print-directory"], _build_rule, build),
        _Spec(
            "python -m compileall -f verbose",
            "log",
            [python, "-m", "compileall", "-f", "."],
            _build_rule,
            workdir / "compile",
        ),
        _Spec("service log small", "log", [python, "app.py", "120"], _log_rule, logs),
        _Spec("service log", "log", [python, "app.py", "4000"], _log_rule, logs),
        _Spec("service log large", "log", [python, "app.py", "12000"], _log_rule, logs),
        _Spec(
            "worker log with tracebacks",
            "log",
            [python, "app.py", "2500", "--tracebacks"],
            _log_rule,
            logs,
        ),
    ]


def _code_and_text_specs() -> list[_Spec]:
    site = SITE_PACKAGES
    return [
        _Spec(
            "cat django query.py",
            "code",
            ["cat", str(site / "django/db/models/query.py")],
            _code_rule,
        ),
        _Spec(
            "cat drf serializers.py",
            "code",
            ["cat", str(site / "rest_framework/serializers.py")],
            _code_rule,
        ),
        _Spec(
            "cat hypothesis core.py",
            "code",
            ["cat", str(site / "hypothesis/strategies/_internal/core.py")],
            _code_rule,
        ),
        _Spec("cat memflow cli.py", "code", ["cat", "memflow_site/cli.py"], _code_rule),
        _Spec("cat memories selectors.py", "code", ["cat", "memories/selectors.py"], _code_rule),
        _Spec(
            "cat npm path-scurry index.js",
            "code",
            ["cat", "/usr/lib/node_modules/npm/node_modules/path-scurry/dist/esm/index.js"],
            _code_rule,
        ),
        _Spec("cat README.md", "text", ["cat", "README.md"], _text_rule),
        _Spec("man ls", "text", ["man", "ls"], _text_rule),
        _Spec("man bash", "text", ["man", "bash"], _text_rule),
        _Spec("pydoc json", "text", [sys.executable, "-m", "pydoc", "json"], _text_rule),
    ]


# --- must-keep rules (independent of the projection code) ----------------------------------


def _clip(line: str, width: int = 160) -> str:
    return line.strip()[:width]


def _last_nonblank(text: str) -> list[str]:
    lines = [line for line in text.splitlines() if line.strip()]
    return [_clip(lines[-1])] if lines else []


def _pytest_rule(text: str) -> list[str]:
    """Failing test ids, assertion text, file:line locations, the final summary line."""
    keep: list[str] = []
    for line in text.splitlines():
        if match := re.match(r"(?:FAILED|ERROR) (\S+)", line):
            keep.append(match[1])
        elif line.startswith("E ") and line[1:].strip():
            keep.append(_clip(line[1:], 120))
        elif match := re.match(r"(\S+\.py:\d+): ", line):
            keep.append(match[1])
    summaries = [line for line in text.splitlines() if re.fullmatch(r"=+ .* =+", line)]
    if summaries:
        keep.append(summaries[-1].strip("= "))
    return keep


def _unittest_rule(text: str) -> list[str]:
    keep: list[str] = []
    for line in text.splitlines():
        if re.match(r"(?:FAIL|ERROR): ", line) or re.match(r"\w+(?:Error|Exception)\b", line):
            keep.append(_clip(line))
        elif match := re.match(r'\s*File "([^"]+)", line (\d+)', line):
            keep.append(f'{match[1]}", line {match[2]}')
        elif re.match(r"Ran \d+ tests? in ", line):
            keep.append(_clip(line))
    return keep + _last_nonblank(text)


def _diff_rule(text: str) -> list[str]:
    """Every changed file name and every commit id."""
    keep = re.findall(r"^diff --git a/\S+ b/(\S+)", text, re.M)
    keep += [sha[:12] for sha in re.findall(r"^commit ([0-9a-f]{40})", text, re.M)]
    return keep


def _search_rule(text: str) -> list[str]:
    """The distinct paths of the hits."""
    return re.findall(r"^([^\s:]+):\d+:", text, re.M)


def _json_rule(text: str) -> list[str]:
    """Top-level keys, short top-level values, and the keys and short values of the first
    item of each top-level array (its representative)."""
    value = json.loads(text)
    keep: list[str] = []
    arrays: list[list[object]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            keep.append(json.dumps(key, ensure_ascii=False))
            keep += _short_scalar(item)
            if isinstance(item, list):
                arrays.append(item)
    elif isinstance(value, list):
        arrays.append(value)
    for array in arrays:
        first = array[0] if array else None
        if isinstance(first, dict):
            for key, item in first.items():
                keep.append(json.dumps(key, ensure_ascii=False))
                keep += _short_scalar(item)
        else:
            keep += _short_scalar(first)
    return keep


def _short_scalar(value: object) -> list[str]:
    if isinstance(value, dict | list) or value is None:
        return []
    encoded = json.dumps(value, ensure_ascii=False)
    return [encoded] if len(encoded) <= 60 else []


def _alarming(line: str) -> bool:
    return bool(
        re.search(r"\b(?:WARNING|WARN|ERROR|CRITICAL|FATAL)\b|\b(?:error|warning):", line)
        or re.match(r"(?:Traceback|\w*(?:Error|Exception)\b)", line)
        or line.startswith("*** ")
    )


def _first_of_each_template(lines: list[str]) -> list[str]:
    seen: set[str] = set()
    keep: list[str] = []
    for line in lines:
        template = re.sub(r"\d+", "0", line)
        if template not in seen:
            seen.add(template)
            keep.append(_clip(line))
    return keep


def _log_rule(text: str) -> list[str]:
    """Each warning or error line template, first occurrence; and the last line."""
    alarms = [line for line in text.splitlines() if _alarming(line)]
    return _first_of_each_template(alarms) + _last_nonblank(text)


def _build_rule(text: str) -> list[str]:
    """Compiler diagnostics and errors (each template's first occurrence), the last line."""
    return _log_rule(text)


def _dpkg_list_rule(text: str) -> list[str]:
    """The legend and column header (what the status letters mean), the last line."""
    lines = text.splitlines()
    header = []
    for line in lines:
        if re.match(r"[a-z]{2}[ A-Z] ", line):
            break
        header.append(_clip(line))
    return header + _last_nonblank(text)


def _directories(paths: list[str], depth: int) -> list[str]:
    keep = []
    for path in paths:
        parent = path.rstrip("/").rpartition("/")[0]
        parts = [part for part in parent.split("/") if part]
        if parts:
            keep.append(("/" if path.startswith("/") else "") + "/".join(parts[:depth]))
    return keep


def _path_list_rule(text: str) -> list[str]:
    """Where things are: every directory, cut to its first three components."""
    return _directories([line.strip() for line in text.splitlines() if "/" in line], 3)


def _pip_show_rule(text: str) -> list[str]:
    """The package's name, version, location and dependencies; its file tree's top levels."""
    fields = ("Name:", "Version:", "Location:", "Requires:", "Required-by:")
    keep = [_clip(line) for line in text.splitlines() if line.startswith(fields)]
    files = text.partition("\nFiles:\n")[2]
    return keep + _directories([line.strip() for line in files.splitlines()], 2)


def _ls_recursive_rule(text: str) -> list[str]:
    """Every directory heading."""
    return re.findall(r"^(\S.*):$", text, re.M)


def _generic_cli_rule(text: str) -> list[str]:
    """Error and warning lines, and the last line."""
    alarms = [
        _clip(line) for line in text.splitlines() if re.search(r"(?i)\b(?:error|warning)\b", line)
    ]
    return alarms + _last_nonblank(text)


def _code_rule(text: str) -> list[str]:
    """Every top-level definition."""
    keep = [f"def {name}" for name in re.findall(r"^(?:async )?def (\w+)", text, re.M)]
    keep += [f"class {name}" for name in re.findall(r"^(?:export )?class (\w+)", text, re.M)]
    keep += [
        f"function {name}"
        for name in re.findall(r"^(?:export )?(?:async )?function\*? (\w+)", text, re.M)
    ]
    return keep


def _text_rule(text: str) -> list[str]:
    """The document's headings: markdown `#` to `###`, or the upper-case section names of
    man and pydoc pages."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)  # not comments in code blocks
    headings = re.findall(r"^(#{1,3} .+|[A-Z][A-Z ]{2,40})$", prose, re.M)
    return [_clip(heading) for heading in headings]


# --- generated inputs ----------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def _write_pytest_project(root: Path) -> None:
    """A small project with real bugs: its failures are what pytest really prints."""
    _write(root / "pytest.ini", "[pytest]\naddopts = -p no:randomly\n")
    _write(root / "conftest.py", "")
    _write(
        root / "calc.py",
        '''
        """A calculator with a few real bugs."""

        def add(a, b):
            return a + b

        def mean(values):
            return sum(values) / len(values)

        def parse_price(text):
            amount = text.strip().lstrip("$")
            return round(float(amount.replace(",", "")), 2)

        def percent(part, whole):
            # bug: integer division
            return part * 100 // whole

        def slugify(title):
            return "-".join(title.lower().split())

        def inventory(items):
            totals = {}
            for name, count in items:
                totals[name] = count  # bug: overwrites instead of adding
            return totals

        def chunks(values, size):
            return [values[i : i + size] for i in range(0, len(values) - size, size)]  # bug: drops the tail
        ''',
    )
    _write(root / "test_calc.py", _TEST_CALC)
    _write(root / "test_many.py", _TEST_MANY)
    _write(
        root / "test_broken.py",
        "import calc\nfrom calc import does_not_exist\n\n\ndef test_never_runs():\n    assert does_not_exist()\n",
    )
    _write(root / "test_unit.py", _TEST_UNIT)


_TEST_CALC = """
    import logging
    import warnings

    import pytest

    import calc

    log = logging.getLogger("calc.tests")


    def test_add():
        assert calc.add(2, 3) == 5


    def test_mean():
        assert calc.mean([1, 2, 3, 4]) == 2.5


    def test_mean_of_nothing():
        assert calc.mean([]) == 0


    @pytest.mark.parametrize(
        "text, expected",
        [("$1,200.50", 1200.5), ("3.14159", 3.14), ("$0.10", 0.1), ("12,5", 12.5), (" 7 ", 7.0)],
    )
    def test_parse_price(text, expected):
        assert calc.parse_price(text) == expected


    @pytest.mark.parametrize("part, whole, expected", [(1, 2, 50), (1, 3, 33.33), (2, 8, 25)])
    def test_percent(part, whole, expected):
        assert calc.percent(part, whole) == pytest.approx(expected, abs=0.01)


    def test_slugify():
        assert calc.slugify("Hello  World") == "hello-world"


    def test_inventory_adds_counts():
        for step in range(200):
            print(f"step {step}: restocking shelf {step % 7} with {step * 3} items")
            log.warning("shelf %d low on stock (%d left)", step % 7, step % 5)
        totals = calc.inventory([("apple", 3), ("pear", 2), ("apple", 4)])
        assert totals == {"apple": 7, "pear": 2}


    def test_chunks_keep_every_value():
        values = list(range(10))
        assert sum(calc.chunks(values, 3), []) == values


    def test_report_lines():
        expected = [f"line {i}: ok" for i in range(40)]
        actual = [f"line {i}: ok" for i in range(40)]
        actual[17] = "line 17: FAILED"
        assert actual == expected


    def test_config_file(tmp_path):
        path = tmp_path / "settings.toml"
        with open(path) as handle:
            assert handle.read()


    @pytest.fixture
    def database():
        raise RuntimeError("could not connect to database at 127.0.0.1:5432")


    def test_uses_database(database):
        assert database


    def test_deprecated_helper():
        warnings.warn("calc.add is deprecated, use calc.plus", DeprecationWarning)
        assert calc.add(1, 1) == 2


    @pytest.mark.skip(reason="needs network")
    def test_exchange_rates():
        pass


    @pytest.mark.xfail(reason="rounding is not fixed yet")
    def test_rounding():
        assert calc.parse_price("0.005") == 0.01
"""

_TEST_MANY = """
    import pytest

    import calc


    @pytest.mark.parametrize("a", range(15))
    @pytest.mark.parametrize("b", range(12))
    def test_add_commutes(a, b):
        assert calc.add(a, b) == calc.add(b, a)


    @pytest.mark.parametrize("word", ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"] * 5)
    def test_slug_of_one_word(word):
        assert calc.slugify(word) == word
"""

_TEST_UNIT = """
    import unittest

    import calc


    class CalcTest(unittest.TestCase):
        def test_add(self):
            self.assertEqual(calc.add(2, 2), 4)

        def test_percent(self):
            self.assertAlmostEqual(calc.percent(1, 3), 33.33, places=2)

        def test_inventory(self):
            self.assertDictEqual(calc.inventory([("a", 1), ("a", 2)]), {"a": 3})

        def test_mean_empty(self):
            self.assertEqual(calc.mean([]), 0)


    class ParseTest(unittest.TestCase):
        def test_prices(self):
            for number in range(60):
                with self.subTest(number=number):
                    self.assertEqual(calc.parse_price(f"${number}.50"), number + 0.5)

        def test_percent_of_seven(self):
            for number in range(1, 25):
                with self.subTest(number=number):
                    self.assertAlmostEqual(calc.percent(number, 7), number * 100 / 7, places=1)

        def test_comma_decimal(self):
            self.assertEqual(calc.parse_price("12,5"), 12.5)

        def test_slugs(self):
            for number in range(80):
                self.assertEqual(calc.slugify(f"Item {number}"), f"item-{number}")


    if __name__ == "__main__":
        unittest.main()
"""


def _write_build_project(root: Path) -> None:
    """C sources with real warnings and one real error, and a Makefile building them."""
    functions = []
    for number in range(40):
        functions.append(
            f"int compute_{number}(int value, int unused_{number}) {{\n"
            f"    int scratch_{number};\n"
            f"    unsigned int limit = {number * 7};\n"
            f"    if (value < limit) return value * {number};\n"
            f'    printf("%s\\n", value);\n'
            f"}}\n"
        )
    source = "#include <stdio.h>\n\n" + "\n".join(functions)
    source += "\nint main(void) {\n    return compute_1(2, 3) + missing_symbol;\n}\n"
    _write(root / "gen.c", source)
    _write(
        root / "util.c",
        '#include <string.h>\n\nint length(const char *s) {\n    int n = strlen(s);\n    char buffer[4];\n    sprintf(buffer, "%d", n);\n}\n',
    )
    _write(root / "ok.c", "int ok(void) { return 0; }\n")
    _write(
        root / "Makefile",
        "CFLAGS = -Wall -Wextra -O2\n\nall: ok.o util.o gen.o\n\n%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n",
    )


def _write_compile_tree(root: Path) -> None:
    """A copy of a real package's sources, plus two files that do not compile."""
    if not root.exists():
        source = SITE_PACKAGES / "rest_framework"
        if source.exists():
            shutil.copytree(source, root / "rest_framework", ignore=_not_python)
    _write(
        root / "broken/settings_bad.py",
        "DEBUG = True\nALLOWED_HOSTS = [\n    'localhost',\n\ndef oops(:\n    pass\n",
    )
    _write(root / "broken/indent_bad.py", "def f():\n    return 1\n      return 2\n")


def _not_python(directory: str, names: list[str]) -> list[str]:
    def wanted(name: str) -> bool:
        return name.endswith(".py") or (Path(directory) / name).is_dir()

    return [name for name in names if name == "__pycache__" or not wanted(name)]


def _write_log_program(root: Path) -> None:
    """A small service that logs what services log: requests with varying numbers, a few
    warnings and errors, and (with --tracebacks) exceptions logged with their traceback."""
    _write(root / "app.py", _LOG_PROGRAM)


_LOG_PROGRAM = """
    import logging
    import random
    import sys

    logging.basicConfig(
        stream=sys.stdout,
        level=logging.DEBUG,
        format="%(asctime)s.%(msecs)03d %(levelname)-8s %(name)s: %(message)s",
        datefmt="%Y-%m-%d %H:%M:%S",
    )
    random.seed(7)
    web, db, jobs = (logging.getLogger(name) for name in ("web", "db", "jobs"))
    count = int(sys.argv[1])
    tracebacks = "--tracebacks" in sys.argv
    paths = ["/api/items", "/api/users", "/health", "/api/orders", "/static/app.js"]


    def charge(order):
        if order % 97 == 0:
            raise ValueError(f"order {order} has a negative total")
        return order


    web.info("listening on 0.0.0.0:8080 with %d workers", 4)
    for step in range(count):
        roll = random.random()
        path = random.choice(paths)
        if roll < 0.55:
            web.info("GET %s/%d 200 in %dms", path, random.randint(1, 999), random.randint(1, 80))
        elif roll < 0.75:
            db.debug("query took %dms rows=%d", random.randint(1, 40), random.randint(0, 500))
        elif roll < 0.9:
            jobs.info("job %d finished in %.2fs", step, random.random() * 3)
        elif roll < 0.97:
            web.info("POST /api/orders 201 in %dms", random.randint(5, 120))
        elif roll < 0.985:
            db.warning("slow query: %dms on table orders (limit 200ms)", random.randint(200, 900))
        elif roll < 0.993:
            web.warning("client %d.%d.%d.%d sent an oversized header", 10, 0, step % 256, 7)
        elif roll < 0.998:
            jobs.error("job %d failed: upstream returned 503, retry %d of 3", step, step % 3 + 1)
        elif tracebacks:
            try:
                charge(97 * (step + 1))
            except ValueError:
                jobs.exception("charging order failed")
        else:
            db.error("connection to replica db-%d lost; failing over", step % 3)
    web.critical("shutting down after %d requests: disk full on /var/lib/app", count)
"""
