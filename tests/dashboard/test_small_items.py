"""The dashboard's small things: skill versions numbered as they are named, times
that say their zone, a switcher that keeps the page, a key page with a copy button."""

from __future__ import annotations

import re

import pytest

from contexts.models import AgentSession
from contexts.tenancy import services as context_services
from skills import services
from tests.dashboard.stories import remember


@pytest.fixture
def beta(alice):
    return context_services.workspace_create(user=alice, slug="beta", name="Beta Labs")


def test_skill_versions_are_numbered_as_they_are_named(acme, victor, as_user):
    skill = services.skill_create(
        workspace=acme, user=None, name="ship", description="Ship it", body="1. Tag", why="hand"
    )
    for step in range(2, 5):
        skill = services.skill_edit(
            skill=skill, user=None, why=f"step {step}", body=f"{step}. more"
        )
    html = as_user(victor).get("/w/acme/skills/").content.decode()
    shown = re.findall(r'<li value="(\d+)">\s*<span class="muted">v(\d+) ·', html)
    assert shown == [("4", "4"), ("3", "3"), ("2", "2"), ("1", "1")]


def test_times_say_their_zone(acme, alice, as_user):
    session = AgentSession.objects.create(workspace=acme, external_id="s-zone", app="dsh")
    html = as_user(alice).get("/w/acme/sessions/").content.decode()
    started = session.started_at.strftime("%Y-%m-%d %H:%M")
    iso = session.started_at.isoformat(timespec="seconds")
    assert f'<time datetime="{iso}">{started} UTC</time>' in html
    detail = as_user(alice).get(f"/w/acme/sessions/{session.pk}/").content.decode()
    assert f"{session.started_at.strftime('%Y-%m-%d %H:%M:%S')} UTC</time>" in detail


def test_settings_can_show_another_zone(acme, alice, as_user, settings):
    settings.TIME_ZONE = "Europe/Berlin"
    session = AgentSession.objects.create(workspace=acme, external_id="s-zone", app="dsh")
    html = as_user(alice).get("/w/acme/sessions/").content.decode()
    assert re.search(r'<time datetime="[^"]+\+0[12]:00">[0-9: -]+ CES?T</time>', html), session


def test_switching_workspace_keeps_the_page(acme, beta, alice, as_user):
    client = as_user(alice)
    html = client.get("/w/acme/skills/").content.decode()
    assert 'href="/w/beta/skills/"' in html and 'href="/w/acme/skills/" aria-current="page"' in html
    # a page about one object leads to the other workspace's overview: nothing is probed there
    memory = remember(acme, "The deploy script lives in ops/deploy.sh")
    html = client.get(f"/w/acme/memories/{memory.pk}/").content.decode()
    assert 'href="/w/beta/"' in html and f"/w/beta/memories/{memory.pk}/" not in html


def test_the_new_key_has_a_copy_button(acme, alice, as_user):
    html = as_user(alice).post("/keys/", {"name": "laptop", "scope": "write"}).content.decode()
    assert "Copy this key now." in html
    assert (
        '<button type="button" data-copy="#raw-key" aria-describedby="copy-status">Copy key</button>'
        in html
    )
    assert '<span id="copy-status" class="muted" aria-live="polite"></span>' in html
