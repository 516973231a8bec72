"""Reversible projection over REST: store, project, get the original back byte for byte."""

from __future__ import annotations

import base64
import hashlib
from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contexts.flowctx import services
from contexts.models import CompressionRef
from tests.flowctx.samples import FAILING_TEST_IDS, failing_pytest_run


@pytest.fixture
def client(acme, bob, make_key, api):
    return api(make_key(bob, workspace=acme))


def store(client, **body):
    response = client.post("/api/v1/workspaces/acme/compression/", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_it_projects_a_failing_test_run_and_keeps_what_the_reader_needs(client):
    original = failing_pytest_run()
    answer = store(client, text=original, tool_name="Bash", exit_code=1)
    assert answer["projected"] is True
    assert answer["kind"] == "test"
    assert answer["projected_chars"] < 0.5 * len(original)
    for test_id in FAILING_TEST_IDS:
        assert test_id in answer["text"]
    assert "2 failed, 300 passed" in answer["text"]
    sha = hashlib.sha256(original.encode()).hexdigest()
    assert answer["ref"]["sha256"] == sha
    # The marker names the hash and where to get the original.
    assert f"/api/v1/workspaces/acme/compression/{sha}/" in answer["text"].splitlines()[0]


def test_it_gives_the_original_back_byte_for_byte_with_its_content_type(client):
    original = failing_pytest_run()
    sha = store(client, text=original)["ref"]["sha256"]
    response = client.get(f"/api/v1/workspaces/acme/compression/{sha}/")
    assert response.status_code == 200
    assert response.content == original.encode()
    assert response["Content-Type"] == "text/plain; charset=utf-8"


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(content=st.binary(min_size=0, max_size=6000) | st.text(max_size=3000).map(str.encode))
def test_any_content_round_trips_byte_for_byte(client, content):
    answer = store(
        client,
        content_base64=base64.b64encode(content).decode(),
        content_type="application/octet-stream",
    )
    got = client.get(f"/api/v1/workspaces/acme/compression/{answer['ref']['sha256']}/")
    assert got.status_code == 200
    assert got.content == content


def test_invalid_utf8_is_stored_as_sent_and_projected_readably(client):
    content = (b"build step \xff\xfe failed at byte 7\n" * 2000) + b"\x00tail\x80"
    answer = store(client, content_base64=base64.b64encode(content).decode(), exit_code=2)
    assert answer["projected"] is True
    assert "\ufffd" in answer["text"]  # shown with replacement characters…
    got = client.get(f"/api/v1/workspaces/acme/compression/{answer['ref']['sha256']}/")
    assert got.content == content  # …kept exactly


def test_the_same_content_is_stored_once_per_workspace(client, acme):
    original = failing_pytest_run()
    first = store(client, text=original)
    second = store(client, text=original, tool_name="Bash")
    assert first["ref"]["sha256"] == second["ref"]["sha256"]
    assert CompressionRef.objects.filter(workspace=acme).count() == 1


def test_short_output_is_stored_but_not_projected(client):
    answer = store(client, text="3 files changed\n")
    assert answer["projected"] is False
    assert answer["text"] == "3 files changed\n"


def test_a_unique_prefix_of_twelve_hex_digits_finds_the_original(client):
    original = failing_pytest_run()
    sha = store(client, text=original)["ref"]["sha256"]
    got = client.get(f"/api/v1/workspaces/acme/compression/{sha[:12]}/")
    assert got.content == original.encode()


@pytest.mark.parametrize(
    ("hash_", "status", "code"),
    [
        ("0" * 64, 404, "not_found"),
        ("abc", 400, "invalid_hash"),
        ("not-a-hash-at-all-zzzzzz", 400, "invalid_hash"),
    ],
)
def test_unknown_or_malformed_hashes_answer_a_clear_error(client, hash_, status, code):
    response = client.get(f"/api/v1/workspaces/acme/compression/{hash_}/")
    assert response.status_code == status
    assert response.json()["code"] == code


def test_an_expired_ref_answers_not_found_unless_pinned(client, acme):
    sha = store(client, text=failing_pytest_run())["ref"]["sha256"]
    CompressionRef.objects.filter(sha256=sha).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    expired = client.get(f"/api/v1/workspaces/acme/compression/{sha}/")
    assert expired.status_code == 404
    assert expired.json()["code"] == "not_found"
    assert "expired" in expired.json()["detail"]

    pin = client.patch(
        f"/api/v1/workspaces/acme/compression/{sha}/", {"pinned": True}, format="json"
    )
    # Pinning needs the ref to be retrievable; an expired one is gone for good.
    assert pin.status_code == 404
    assert services.compression_cleanup() == 1
    assert not CompressionRef.objects.filter(sha256=sha).exists()


def test_a_pinned_ref_outlives_its_expiry_and_the_cleanup(client):
    sha = store(client, text=failing_pytest_run())["ref"]["sha256"]
    pin = client.patch(
        f"/api/v1/workspaces/acme/compression/{sha}/", {"pinned": True}, format="json"
    )
    assert pin.status_code == 200 and pin.json()["pinned"] is True
    CompressionRef.objects.filter(sha256=sha).update(expires_at=timezone.now() - timedelta(days=1))
    assert services.compression_cleanup() == 0
    assert client.get(f"/api/v1/workspaces/acme/compression/{sha}/").status_code == 200


def test_storing_again_renews_the_expiry(client, acme):
    original = failing_pytest_run()
    sha = store(client, text=original)["ref"]["sha256"]
    soon = timezone.now() + timedelta(hours=1)
    CompressionRef.objects.filter(sha256=sha).update(expires_at=soon)
    store(client, text=original)
    renewed = CompressionRef.objects.get(sha256=sha).expires_at
    assert renewed is not None and renewed > soon + timedelta(days=6)


def test_it_requires_exactly_one_of_text_and_content(client):
    response = client.post(
        "/api/v1/workspaces/acme/compression/",
        {"text": "x", "content_base64": "eA=="},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    bad = client.post(
        "/api/v1/workspaces/acme/compression/", {"content_base64": "%%%"}, format="json"
    )
    assert bad.status_code == 400
    assert bad.json()["code"] == "invalid_base64"


def test_a_reader_cannot_store_but_can_retrieve(acme, victor, bob, make_key, api):
    writer = api(make_key(bob, workspace=acme))
    sha = store(writer, text=failing_pytest_run())["ref"]["sha256"]
    reader = api(make_key(victor, workspace=acme))
    assert reader.get(f"/api/v1/workspaces/acme/compression/{sha}/").status_code == 200
    refused = reader.post("/api/v1/workspaces/acme/compression/", {"text": "x"}, format="json")
    assert refused.status_code == 403


def test_another_workspace_cannot_see_the_original(client, evil, mallory, make_key, api):
    sha = store(client, text=failing_pytest_run())["ref"]["sha256"]
    outsider = api(make_key(mallory, workspace=evil))
    assert outsider.get(f"/api/v1/workspaces/evil/compression/{sha}/").status_code == 404
    assert outsider.get(f"/api/v1/workspaces/acme/compression/{sha}/").status_code == 404
