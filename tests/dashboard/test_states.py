"""The states page: every key, its current value, its history."""

from __future__ import annotations

from memories import services
from memories.services import RememberInput
from tests.dashboard.stories import ESCAPED_SCRIPT, SCRIPT


def set_state(workspace, key, value):
    return services.memory_remember(
        workspace=workspace,
        item=RememberInput(text=f"{key} is {value}", state_key=key, state_value=value),
    ).memory


def test_each_key_shows_its_current_value_and_its_history(acme, bob, as_user):
    for value in ("staging-1", "staging-2", f"prod {SCRIPT}"):
        latest = set_state(acme, "deploy.target", value)
    set_state(acme, "sprint", "42")
    html = as_user(bob).get("/w/acme/states/").content.decode()
    row = html.split("deploy.target")[1].split("</tr>")[0]
    assert f"#{latest.pk}</a> prod {ESCAPED_SCRIPT}" in row
    assert "3 values" in row
    timeline = row.split('<ol class="timeline">')[1]
    assert timeline.index("staging-1") < timeline.index("staging-2") < timeline.index("prod")
    assert 'aria-current="true"' in timeline.split("staging-2")[1]
    assert SCRIPT not in html
    assert "sprint" in html and "first value" in html


def test_searching_keys_swaps_the_table(acme, bob, as_user):
    set_state(acme, "deploy.target", "prod")
    set_state(acme, "sprint", "42")
    client = as_user(bob)
    html = client.get("/w/acme/states/?q=sprI", HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith('<div id="state-table">')
    assert "sprint" in html and "deploy.target" not in html
    none = client.get("/w/acme/states/?q=nope", HTTP_HX_REQUEST="true").content.decode()
    assert "No state key contains" in none


def test_keys_are_paginated(acme, bob, as_user):
    services.memory_remember_bulk(
        workspace=acme,
        items=[
            RememberInput(text=f"key {i:02} is on", state_key=f"key.{i:02}", state_value="on")
            for i in range(55)
        ],
    )
    client = as_user(bob)
    first = client.get("/w/acme/states/").content.decode()
    assert "key.49" in first and "key.50" not in first and "page 1 of 2" in first
    assert "key.54" in client.get("/w/acme/states/?page=2").content.decode()


def test_empty_and_forbidden(acme, bob, mallory, as_user):
    assert "No state keys yet" in as_user(bob).get("/w/acme/states/").content.decode()
    outsider = as_user(mallory)
    for method in ("get", "post"):
        assert getattr(outsider, method)("/w/acme/states/").status_code == 404
