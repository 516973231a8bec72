"""Schemathesis over the project's own OpenAPI schema, as bob (an editor of
acme), every operation, in-process: no 5xx, every 4xx a JSON body with a
`code`, every 2xx body as the schema describes it."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.reliability.fuzzing import fuzz_schema, summary


@pytest.fixture
def seeded(acme, bob, make_key, api) -> APIClient:
    """Something in every list the fuzzer reads, so their items are checked too."""
    client = api(make_key(bob))

    def post(path: str, body: dict[str, Any]) -> None:
        answer = client.post(path, body, format="json")
        assert answer.status_code < 300, (path, answer.content)

    ws = "/api/v1/workspaces/acme"
    post(f"{ws}/memories/", {"text": "The staging database is Postgres 16 on port 5433."})
    post(f"{ws}/memories/", {"text": "The staging database is Postgres 16, on port 5433."})
    for value in ("train", "argocd"):
        post(
            f"{ws}/memories/",
            {
                "text": f"Deploys go through {value}",
                "state_key": "deploy.via",
                "state_value": value,
            },
        )
    post(f"{ws}/core/memory/", {"action": "add", "content": "CI runs on self-hosted runners"})
    post(f"{ws}/core/user/", {"action": "add", "content": "Bob prefers small pull requests"})
    post(f"{ws}/declarations/", {"directory": "/repo", "source_text": "preload: [README.md]\n"})
    post(f"{ws}/documents/", {"documents": [{"path": "/repo/README.md", "content": "# Acme"}]})
    post(f"{ws}/compression/", {"text": "collected 40 items\n" * 300, "session_id": "seed"})
    post(
        "/api/v1/hooks/user-prompt",
        {"session_id": "seed", "workspace": "acme", "prompt": "how do deploys work here?"},
    )
    return client


def test_every_operation_answers_fuzzed_requests_without_a_server_error(seeded, bob, make_key):
    report = fuzz_schema(raw_key=make_key(bob), slug="acme", max_examples=3)
    print(summary(report))
    assert report.operations >= 70  # every operation of the schema, skills' included
    assert report.cases >= 2 * report.operations
    assert not report.findings, "\n\n".join(str(f) for f in report.findings)


@pytest.mark.slow
def test_a_long_random_fuzz_finds_no_server_error(seeded, bob, make_key):
    report = fuzz_schema(raw_key=make_key(bob), slug="acme", max_examples=25, derandomize=False)
    print(summary(report))
    assert not report.findings, "\n\n".join(str(f) for f in report.findings)
