"""Headless Chromium (Debian's `chromium`) driven by Playwright against a real
`memflow serve` on the test database.

The server runs in its own process, so the data each test creates must be
committed: the tests use `transactional_db`. Playwright's own browser download
is never used; without /usr/bin/chromium or the `playwright` package the tests
skip and say what to install.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.memflow_site.helpers import env_for, serving, wait_for_embeddings

CHROMIUM = os.environ.get("MEMFLOW_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).parent / "artifacts"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


def _missing() -> str | None:
    if importlib.util.find_spec("playwright") is None:
        return "browser tests need Playwright's Python package: pip install -e '.[dev]' (or pip install playwright)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"browser tests need Chromium at {CHROMIUM}: apt-get install chromium"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = _missing()
    if reason is None:
        return
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.skip(reason=reason))


def _database_url() -> str:
    """The test database, as a URL the server process can use."""
    from django.db import connection

    connection.ensure_connection()  # the embedded backend fills in its socket on connect
    s = connection.settings_dict
    auth = quote(s["USER"] or "", safe="")
    if s["PASSWORD"]:
        auth += ":" + quote(s["PASSWORD"], safe="")
    port = f":{s['PORT']}" if s["PORT"] else ""
    host = quote(s["HOST"] or "", safe="")
    return f"postgresql://{auth}@{port}/{quote(s['NAME'], safe='')}?host={host}"


@pytest.fixture(autouse=True)
def real_password_hashing(settings: Any) -> None:
    """The live server verifies logins with the real hashers (not the suite's fast one)."""
    from django.conf import global_settings

    settings.PASSWORD_HASHERS = global_settings.PASSWORD_HASHERS


@pytest.fixture(scope="module")
def live_url(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    """`memflow serve` (no worker) on a free port, against the test database."""
    with django_db_blocker.unblock():
        url = _database_url()
    with tempfile.TemporaryDirectory(prefix="memflow-browser-") as data_dir:
        env = env_for(Path(data_dir), database_url=url)
        # The pages show what both arms found: a prompt hook that answered by its
        # words alone (the model still loading, or a busy machine) has no dense
        # column to show, so these servers wait for the model, loaded first.
        env["MEMFLOW_HOOK_EMBED_WAIT"] = "60"
        with serving(env, "--no-worker") as served:
            wait_for_embeddings(served)
            yield served.url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=60_000)  # the same hang guard as the pages' own waits

    # Playwright's sync API keeps an event loop on this thread while it runs;
    # the tests' own ORM calls (making data, checking results) stay synchronous.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


class Problems:
    """What went wrong in the page: console errors, failed requests, uncaught exceptions."""

    def __init__(self, page: Any) -> None:
        self.found: list[str] = []
        page.on("pageerror", lambda exc: self.found.append(f"page error: {exc}"))
        page.on("console", self._console)
        page.on("response", self._response)
        page.on("requestfailed", self._failed)

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.found.append(f"console: {message.text}")

    def _failed(self, request: Any) -> None:
        # A request the page no longer waits for (the test moved on, as a person
        # clicking away would: the overview's panels load after it is shown) is
        # cancelled by the browser, not failed by the server.
        if request.failure != "net::ERR_ABORTED":
            self.found.append(f"failed: {request.url} ({request.failure})")

    def _response(self, response: Any) -> None:
        if response.status >= 500:
            self.found.append(f"{response.status} {response.url}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.stash[_FAILED] = report.failed
    return report


_FAILED = pytest.StashKey[bool]()


@pytest.fixture
def page(request: pytest.FixtureRequest, live_url: str, browser: Any) -> Iterator[Any]:
    context = browser.new_context(base_url=live_url, viewport=DESKTOP)
    # A hang guard: with every core busy a login (PBKDF2) took over 15 s.
    context.set_default_timeout(60_000)
    page = context.new_page()
    page.problems = Problems(page)
    yield page
    if request.node.stash.get(_FAILED, False):  # what the page looked like when it failed
        screenshot(page, f"FAILED-{request.node.name}")
    context.close()


def log_in(page: Any, username: str, password: str) -> None:
    page.goto("/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/w/**")


def screenshot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # caret="initial": hiding the caret injects a <style>, which the pages' CSP refuses.
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True, caret="initial")
