"""A stored original never renders as a page (finding 1 of the security review).

An editor stored `text/html` with a script, and the owner's logged-in browser
opened its URL on the dashboard's origin: the script created an admin key.
Originals are now downloads with a sandboxing policy, content types are
checked on the way in, and dashboard pages allow no inline script at all.
"""

from __future__ import annotations

import base64

import pytest
from django.test import Client

from contexts.models import ApiKey, CompressionRef

PLANTED = (
    b"<!doctype html><script>fetch('/api/v1/keys/',{method:'POST',credentials:'include',"
    b"headers:{'Content-Type':'application/json'},body:JSON.stringify({scope:'admin'})})"
    b"</script>"
)


@pytest.fixture
def editor(acme, bob, make_key, api):
    return api(make_key(bob, workspace=acme))


@pytest.fixture
def owner_browser(alice) -> Client:
    browser = Client()
    browser.force_login(alice)
    return browser


def plant(editor, content: bytes = PLANTED, content_type: str = "text/html") -> str:
    response = editor.post(
        "/api/v1/workspaces/acme/compression/",
        {"content_base64": base64.b64encode(content).decode(), "content_type": content_type},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()["ref"]["sha256"]


def assert_inert_download(response, content: bytes) -> None:
    assert response.status_code == 200
    assert response.content == content  # still byte for byte
    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"].startswith("attachment;")
    assert response["X-Content-Type-Options"] == "nosniff"
    policy = response["Content-Security-Policy"]
    assert "sandbox" in policy and "default-src 'none'" in policy


def test_an_html_original_opened_by_the_owners_browser_is_a_sandboxed_download(
    editor, owner_browser
):
    sha = plant(editor)
    # The attack's URL: the REST route, with the dashboard's session cookie.
    answer = owner_browser.get(f"/api/v1/workspaces/acme/compression/{sha}/")
    assert_inert_download(answer, PLANTED)
    assert answer["X-Memflow-Content-Type"] == "text/html"  # what was stored is still said


def test_the_dashboards_download_of_an_original_is_the_same_inert_attachment(editor, owner_browser):
    sha = plant(editor)
    answer = owner_browser.get(f"/w/acme/compression/{sha}/?download=1")
    assert_inert_download(answer, PLANTED)


@pytest.mark.parametrize("active", ["image/svg+xml", "application/xhtml+xml", "text/xml"])
def test_other_types_a_browser_would_run_are_served_as_bytes(editor, active):
    sha = plant(editor, b"<svg onload='alert(1)'/>", active)
    answer = editor.get(f"/api/v1/workspaces/acme/compression/{sha}/")
    assert answer["Content-Type"] == "application/octet-stream"


def test_inert_text_keeps_its_type(editor):
    sha = plant(editor, b"plain output\n", "text/plain; charset=utf-8")
    answer = editor.get(f"/api/v1/workspaces/acme/compression/{sha}/")
    assert answer["Content-Type"] == "text/plain; charset=utf-8"
    assert answer.content == b"plain output\n"


@pytest.mark.parametrize(
    "bad",
    [
        "text/plain\r\nSet-Cookie: a=b",
        "text/html\nX-Evil: 1",
        "not a type",
        "text/",
        "text/plain; charset=utf-8\x00",
        "x/" + "y" * 300,
    ],
)
def test_a_malformed_content_type_is_refused_and_nothing_is_stored(editor, bad):
    response = editor.post(
        "/api/v1/workspaces/acme/compression/",
        {"text": "some output", "content_type": bad},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["code"] in ("invalid_content_type", "invalid_characters", "invalid")
    assert not CompressionRef.objects.exists()


def test_an_original_stored_with_a_crlf_type_before_the_check_is_still_retrievable(editor, acme):
    sha = plant(editor, b"old output\n", "text/plain")
    CompressionRef.objects.filter(sha256=sha).update(content_type="text/plain\r\nX-Evil: 1")
    answer = editor.get(f"/api/v1/workspaces/acme/compression/{sha}/")
    assert answer.status_code == 200
    assert answer.content == b"old output\n"
    assert answer["Content-Type"] == "application/octet-stream"
    assert "X-Evil" not in answer


def test_dashboard_pages_allow_no_inline_script_and_no_framing(owner_browser, acme):
    page = owner_browser.get("/w/acme/")
    assert page.status_code == 200
    policy = page["Content-Security-Policy"]
    directives = {
        name: value
        for name, _, value in (part.strip().partition(" ") for part in policy.split(";"))
    }
    assert directives["script-src"] == "'self'"
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    assert directives["frame-ancestors"] == "'none'"
    assert page["X-Frame-Options"] == "DENY"
    assert page["Referrer-Policy"] == "same-origin"
    # …and the page itself has nothing inline that the policy would block.
    html = page.content.decode()
    assert "onsubmit=" not in html and 'style="' not in html
    assert ApiKey.objects.count() == 0
