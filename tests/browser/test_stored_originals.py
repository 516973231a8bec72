"""The stored-XSS attack of the security review, replayed in a real browser.

An editor stores an HTML original whose script would create an admin key
with the viewer's session; the owner, logged in, opens its URL. The browser
must download it, not run it, and the owner's keys stay as they were.
"""

from __future__ import annotations

import pytest

from contexts.flowctx import services as flowctx_services
from contexts.models import ApiKey
from tests.browser.conftest import log_in

pytestmark = pytest.mark.django_db(transaction=True)

PLANTED = (
    b"<!doctype html><title>planted</title><script>"
    b"window.pwned = 1;"
    b"fetch('/api/v1/keys/', {method: 'POST', credentials: 'include',"
    b" headers: {'Content-Type': 'application/json'}, body: JSON.stringify({scope: 'admin'})});"
    b"</script>"
)


def test_an_html_original_opened_by_its_logged_in_owner_downloads_and_never_runs(page, acme, alice):
    ref = flowctx_services.compression_store(
        workspace=acme, content=PLANTED, content_type="text/html"
    ).ref
    log_in(page, "alice", "alice-password")
    keys_before = ApiKey.objects.count()
    for url in (
        f"/api/v1/workspaces/acme/compression/{ref.sha256}/",
        f"/w/acme/compression/{ref.sha256}/?download=1",
    ):
        with page.expect_download() as download:
            try:
                page.goto(url)
            except Exception as exc:  # Chromium reports a download as an aborted navigation
                assert "Download is starting" in str(exc) or "ERR_ABORTED" in str(exc)
        with open(download.value.path(), "rb") as saved:
            assert saved.read() == PLANTED  # byte for byte, on the person's disk
        assert "planted" not in page.title()
    assert page.evaluate("window.pwned") is None
    assert ApiKey.objects.count() == keys_before
