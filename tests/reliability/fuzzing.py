"""Run schemathesis over memflow's own OpenAPI schema, in-process.

The Django WSGI app answers each generated request in the test's own thread,
so it shares the test's database transaction; every request runs in a
savepoint that is rolled back, so each case meets the same workspace (a case
that deletes the workspace or revokes the key does not spoil the next one).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import hypothesis
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from hypothesis import strategies as st
from schemathesis.core import NotSet
from schemathesis.core.failures import FailureGroup
from schemathesis.core.result import Err
from schemathesis.core.transport import Response
from schemathesis.generation import GenerationMode
from schemathesis.generation.case import Case
from schemathesis.schemas import APIOperation, BaseSchema
from schemathesis.specs.openapi.checks import response_schema_conformance

from contexts.hooks.registry import EVENTS

# Path parameters worth aiming at real values some of the time: a random
# string almost never names a hook event or a core document.
PATH_CHOICES: dict[str, tuple[str, ...]] = {
    "event": EVENTS,
    "target": ("user", "memory"),
}


@dataclass
class Finding:
    operation: str
    problem: str
    request: str
    status: int
    body: str

    def __str__(self) -> str:
        return f"{self.operation}: {self.problem}\n  {self.request}\n  -> {self.status} {self.body[:300]}"


@dataclass
class FuzzReport:
    operations: int = 0
    cases: int = 0
    by_status: dict[int, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    _kinds: set[tuple[str, str]] = field(default_factory=set)

    def add(self, finding: Finding) -> None:
        # One finding per operation and kind of problem is enough to act on.
        kind = (finding.operation, finding.problem.split(":")[0])
        if kind not in self._kinds:
            self._kinds.add(kind)
            self.findings.append(finding)

    def count(self, status: int) -> None:
        self.cases += 1
        self.by_status[status] = self.by_status.get(status, 0) + 1


class _Tracebacks(logging.Handler):
    """The server's last logged traceback, to show beside a 5xx finding."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.last = ""

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            text = logging.Formatter().formatException(record.exc_info)
            self.last = "\n".join(text.splitlines()[-6:])


TRACEBACKS = _Tracebacks()


@contextmanager
def in_process_requests() -> Iterator[None]:
    """Keep the test's connection open across WSGI requests, as Django's test client does."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    # Thousands of expected 4xx lines would bury the findings.
    request_log = logging.getLogger("django.request")
    level = request_log.level
    request_log.setLevel(logging.ERROR)
    request_log.addHandler(TRACEBACKS)
    try:
        yield
    finally:
        request_log.removeHandler(TRACEBACKS)
        request_log.setLevel(level)
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def load_schema(raw_key: str) -> BaseSchema:
    return schemathesis.openapi.from_wsgi(
        "/api/v1/schema/?format=json",
        WSGIHandler(),
        headers={"Authorization": f"Bearer {raw_key}"},
    )


def _describe(case: Case) -> str:
    body = "" if isinstance(case.body, NotSet) else json.dumps(case.body, default=str)[:300]
    return f"{case.method} {case.formatted_path} query={case.query or {}} body={body}"


def check_response(case: Case, response: Response, report: FuzzReport, name: str) -> None:
    status = response.status_code
    report.count(status)

    def finding(problem: str) -> None:
        report.add(Finding(name, problem, _describe(case), status, response.text or ""))

    if status >= 500:
        finding(f"server error\n{TRACEBACKS.last}")
        return
    if 400 <= status < 500:
        try:
            body = json.loads(response.text or "")
        except ValueError:
            finding("4xx without a JSON body")
            return
        if not isinstance(body, dict) or not isinstance(body.get("code"), str):
            finding("4xx JSON body without a `code`")
        return
    if 200 <= status < 300 and case.meta is not None:
        # Schema honesty: what a success returns is what the schema says.
        try:
            case.validate_response(response, checks=[response_schema_conformance])
        except FailureGroup as exc:
            titles = "; ".join(f"{f.title}: {f.message[:300]}" for f in exc.exceptions)
            finding(f"response does not match the schema: {titles}")


def fuzz_operation(
    operation: APIOperation,
    *,
    raw_key: str,
    slug: str,
    mode: GenerationMode,
    max_examples: int,
    report: FuzzReport,
    derandomize: bool,
) -> None:
    name = f"{operation.method.upper()} {operation.path}"
    fixed = {"slug": slug} if "{slug}" in operation.path else None
    strategy = operation.as_strategy(generation_mode=mode, path_parameters=fixed)
    headers = {"Authorization": f"Bearer {raw_key}"}

    @hypothesis.settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=derandomize,
        suppress_health_check=list(hypothesis.HealthCheck),
        phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
    )
    @hypothesis.given(case=strategy, data=st.data())
    def run(case: Case, data: st.DataObject) -> None:
        for param, choices in PATH_CHOICES.items():
            if param in (case.path_parameters or {}):
                case.path_parameters[param] = data.draw(
                    st.sampled_from((*choices, case.path_parameters[param]))
                )
        TRACEBACKS.last = ""
        with transaction.atomic():
            response = case.call(headers=headers)
            transaction.set_rollback(True)
        check_response(case, response, report, name)

    try:
        run()
    except hypothesis.errors.Unsatisfiable:
        # Nothing to negate: an operation without parameters or body has no
        # schema-violating request.
        assert mode == GenerationMode.NEGATIVE, name


def fuzz_schema(
    *,
    raw_key: str,
    slug: str,
    max_examples: int,
    modes: tuple[GenerationMode, ...] = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE),
    derandomize: bool = True,
    exclude: tuple[str, ...] = (),
) -> FuzzReport:
    report = FuzzReport()
    with in_process_requests():
        schema = load_schema(raw_key)
        for result in schema.get_all_operations():
            if isinstance(result, Err):
                raise result.err()
            operation = result.ok()
            if any(part in operation.path for part in exclude):
                continue
            report.operations += 1
            for mode in modes:
                fuzz_operation(
                    operation,
                    raw_key=raw_key,
                    slug=slug,
                    mode=mode,
                    max_examples=max_examples,
                    report=report,
                    derandomize=derandomize,
                )
    return report


def summary(report: FuzzReport) -> dict[str, Any]:
    return {
        "operations": report.operations,
        "cases": report.cases,
        "by_status": dict(sorted(report.by_status.items())),
        "findings": len(report.findings),
    }
