"""Scripted coding sessions for `memflow bench work` and its tests.

Each is what a harness's hooks send while an agent works: the user's
request, the tool calls with their real output (a test failing and then
passing, a dependency upgrade that breaks, a config change, an attempt
reverted), the agent's closing reply. Then questions a person asks weeks
later about that work, in other words than the session used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Event = tuple[str, dict[str, Any]]


def prompt(text: str) -> Event:
    return ("user-prompt", {"prompt": text})


def bash(command: str, output: str, exit_code: int = 0) -> Event:
    return (
        "post-tool-use",
        {
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_response": {
                "stdout": output if exit_code == 0 else "",
                "stderr": "" if exit_code == 0 else output,
                "exit_code": exit_code,
                "interrupted": False,
            },
        },
    )


def edit(path: str, old: str, new: str) -> Event:
    return (
        "post-tool-use",
        {
            "tool_name": "Edit",
            "tool_input": {"file_path": path, "old_string": old, "new_string": new},
            "tool_response": {"filePath": path, "oldString": old, "newString": new},
        },
    )


def stop(text: str) -> Event:
    return ("stop", {"last_assistant_message": text})


@dataclass(frozen=True)
class ScriptedSession:
    external_id: str
    events: list[Event]
    # Later questions about this session's work, none in the session's words.
    questions: list[str] = field(default_factory=list)


def _pytest_failure(test: str, error: str, where: str) -> str:
    return (
        "============================= test session starts ==============================\n"
        "collected 14 items\n\n"
        f"{test.split('::')[0]} ....F.........                                [100%]\n\n"
        "=================================== FAILURES ===================================\n"
        f"___________________________ {test.split('::')[-1]} ___________________________\n"
        f"{where}\n"
        f"E       {error}\n"
        "=========================== short test summary info ============================\n"
        f"FAILED {test} - {error}\n"
        "========================= 1 failed, 13 passed in 2.41s ========================="
    )


def _pytest_pass(n: int) -> str:
    return f"collected {n} items\n\n{'.' * n}  [100%]\n\n======== {n} passed in 1.93s ========"


SESSIONS: list[ScriptedSession] = [
    ScriptedSession(
        "work-retry",
        [
            prompt(
                "test_backoff_retries in tests/test_retry.py fails now and then on CI, "
                "make it deterministic"
            ),
            bash(
                "pytest tests/test_retry.py -q",
                _pytest_failure(
                    "tests/test_retry.py::test_backoff_retries",
                    "AssertionError: expected 3 attempts within 0.5s, got 2",
                    "    assert len(attempts) == 3",
                ),
                1,
            ),
            edit(
                "src/http/retry.py",
                "time.sleep(delay)",
                "self._sleep(delay)  # injected clock, tests pass a fake",
            ),
            bash("pytest tests/test_retry.py -q", _pytest_pass(14)),
            stop(
                "The backoff slept on the real clock, so a slow CI runner missed the deadline. "
                "Retry now takes an injectable sleep and the test passes a fake clock."
            ),
        ],
        [
            "how did we fix the flaky retry test?",
            "why did the backoff test fail intermittently on the build server",
        ],
    ),
    ScriptedSession(
        "work-redis",
        [
            prompt(
                "Drop the Redis cache from the session store: after each deploy it served "
                "stale sessions. Use the database cache backend instead."
            ),
            edit(
                "config/settings.py",
                'CACHES = {"default": {"BACKEND": "django_redis.cache.RedisCache"}}',
                'CACHES = {"default": {"BACKEND": '
                '"django.core.cache.backends.db.DatabaseCache", "LOCATION": "cache_table"}}',
            ),
            bash(
                "python manage.py createcachetable",
                "Cache table 'cache_table' created.",
            ),
            bash("pip uninstall -y django-redis redis", "Successfully uninstalled redis-5.0.1"),
            bash("pytest -q", _pytest_pass(212)),
            stop(
                "Sessions now use the database cache; Redis is gone from the stack, so "
                "nothing stale survives a deploy."
            ),
        ],
        [
            "why did we get rid of the Redis cache?",
            "what do sessions use for caching now, and why the change",
        ],
    ),
    ScriptedSession(
        "work-psycopg",
        [
            prompt("Upgrade psycopg from 3.1 to 3.2 and keep the test suite green"),
            bash(
                "pip install -U 'psycopg[binary]==3.2.1'",
                "Successfully installed psycopg-3.2.1 psycopg-binary-3.2.1",
            ),
            bash(
                "pytest tests/db -q",
                _pytest_failure(
                    "tests/db/test_export.py::test_streaming_export",
                    "psycopg.ProgrammingError: named cursors require a transaction",
                    "    with conn.cursor(name='export') as cur:",
                ),
                1,
            ),
            edit(
                "app/db/export.py",
                "with conn.cursor(name='export') as cur:",
                "with conn.transaction(), conn.cursor(name='export') as cur:",
            ),
            bash("pytest tests/db -q", _pytest_pass(41)),
            stop(
                "psycopg 3.2 is in; the streaming export now opens its named cursor inside "
                "a transaction, which 3.2 requires."
            ),
        ],
        [
            "what broke the last time we upgraded the postgres driver?",
            "which test failed after bumping psycopg and how was it repaired",
        ],
    ),
    ScriptedSession(
        "work-timeout",
        [
            prompt(
                "The CSV export endpoint dies with 502s behind gunicorn for big accounts. "
                "Raise the worker timeout."
            ),
            bash(
                "curl -s -o /dev/null -w '%{http_code}' localhost:8000/export/big.csv",
                "502",
            ),
            edit("deploy/gunicorn.conf.py", "timeout = 30", "timeout = 120"),
            bash(
                "curl -s -o /dev/null -w '%{http_code}' localhost:8000/export/big.csv",
                "200",
            ),
            stop("Gunicorn's worker timeout is 120s now; the big export finishes with a 200."),
        ],
        [
            "what did we change in the gunicorn config and why?",
            "why were large CSV downloads returning bad gateway errors",
        ],
    ),
    ScriptedSession(
        "work-pydantic",
        [
            prompt("Try moving the API schemas to pydantic v2"),
            bash(
                "pip install -U 'pydantic>=2'",
                "Successfully installed pydantic-2.7.1 pydantic-core-2.18.2",
            ),
            bash(
                "pytest tests/api -q",
                "ImportError while loading conftest '/srv/app/tests/api/conftest.py'.\n"
                "app/schemas.py:3: in <module>\n"
                "    from pydantic import BaseSettings\n"
                "E   pydantic.errors.PydanticImportError: `BaseSettings` has been moved to "
                "the `pydantic-settings` package",
                4,
            ),
            bash("git checkout -- requirements.txt && pip install -r requirements.txt", "ok"),
            stop(
                "Reverted: v2 needs pydantic-settings and a rewrite of every validator; "
                "we stay on pydantic 1.10 for now."
            ),
        ],
        [
            "did we ever attempt the pydantic 2 migration?",
            "what stopped the move to the newer pydantic major version",
        ],
    ),
    ScriptedSession(
        "work-webpack",
        [
            prompt("Upgrade webpack to 5 in the frontend"),
            bash("npm install webpack@5 webpack-cli@5 --save-dev", "added 12 packages"),
            bash(
                "npm run build",
                "ERROR in ./src/crypto.js 3:0-27\n"
                "Module not found: Error: Can't resolve 'crypto' in '/srv/app/frontend/src'\n"
                "BREAKING CHANGE: webpack < 5 used to include polyfills for node.js core "
                "modules by default.",
                1,
            ),
            edit(
                "frontend/webpack.config.js",
                "resolve: {",
                "resolve: { fallback: { crypto: require.resolve('crypto-browserify') },",
            ),
            bash("npm run build", "webpack 5.91.0 compiled successfully in 8123 ms"),
            stop("Webpack 5 builds; crypto is polyfilled with crypto-browserify."),
        ],
        [
            "how did we get the frontend bundle building after the bundler major upgrade?",
            "what node core module polyfill did we have to add",
        ],
    ),
    ScriptedSession(
        "work-migration",
        [
            prompt("Add an owner to Project and migrate"),
            edit("app/models.py", "class Project(models.Model):", "class Project(models.Model):"),
            bash(
                "python manage.py migrate",
                "django.db.utils.ProgrammingError: column projects_project.owner_id does not exist",
                1,
            ),
            edit(
                "app/migrations/0042_project_owner.py",
                "dependencies = [('app', '0040_tags')]",
                "dependencies = [('app', '0041_backfill_accounts')]",
            ),
            bash("python manage.py migrate", "Applying app.0042_project_owner... OK"),
            stop("The owner migration depended on the wrong predecessor; it runs after 0041 now."),
        ],
        [
            "why did the project owner migration blow up?",
            "how did we repair the missing owner_id column error",
        ],
    ),
    ScriptedSession(
        "work-tz",
        [
            prompt(
                "test_daily_report_dates fails only when CI runs near midnight UTC; find out why"
            ),
            bash(
                "pytest tests/test_reports.py -q",
                _pytest_failure(
                    "tests/test_reports.py::test_daily_report_dates",
                    "AssertionError: assert datetime.date(2024, 3, 2) == datetime.date(2024, 3, 1)",
                    "    assert report.day == date.today()",
                ),
                1,
            ),
            edit(
                "app/reports.py",
                "day = date.today()",
                "day = timezone.localdate()",
            ),
            bash("pytest tests/test_reports.py -q", _pytest_pass(9)),
            stop("The report used the server's local date; it uses timezone.localdate() now."),
        ],
        [
            "why did the report test break around midnight?",
            "what was wrong with the dates in daily reports",
        ],
    ),
    ScriptedSession(
        "work-npm",
        [
            prompt("CI cannot install the frontend dependencies since the eslint 9 bump"),
            bash(
                "npm ci",
                "npm ERR! code ERESOLVE\n"
                "npm ERR! ERESOLVE could not resolve\n"
                "npm ERR! While resolving: eslint-plugin-react@7.33.2\n"
                "npm ERR! Found: eslint@9.2.0\n"
                'npm ERR! Could not resolve dependency: peer eslint@"^8" from '
                "eslint-plugin-react@7.33.2",
                1,
            ),
            bash("npm ci --legacy-peer-deps", "added 1312 packages in 41s"),
            edit(".github/workflows/ci.yml", "run: npm ci", "run: npm ci --legacy-peer-deps"),
            stop(
                "CI installs with --legacy-peer-deps until eslint-plugin-react supports eslint 9."
            ),
        ],
        [
            "what made the frontend dependency install fail on CI?",
            "how do we get around the peer dependency conflict with the linter plugin",
        ],
    ),
]
