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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from contexts.flowctx.corpus_inputs import (
    SITE_PACKAGES,
    _write_build_project,
    _write_compile_tree,
    _write_log_program,
    _write_pytest_project,
)

REPO = Path(__file__).resolve().parents[2]
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
        _Spec("cat memflow cli.py", "code", ["cat", "memflow_site/cli/main.py"], _code_rule),
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
