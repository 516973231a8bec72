"""The workspace overview: counts, growth, injection → use, sessions, what waits."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memories.models import Memory
from tests.dashboard.stories import ESCAPED_SCRIPT, SCRIPT, remember, session_story


def test_an_empty_workspace_explains_each_panel(acme, bob, as_user):
    html = as_user(bob).get("/w/acme/").content.decode()
    assert "Nothing has been injected yet" in html
    assert "No agent has opened a session here yet" in html
    assert "No conflicting memories found." in html
    assert "No valuable memory is fading." in html
    assert "nothing yet" in html  # the empty growth charts say so


def test_it_counts_draws_growth_and_the_use_rate(acme, bob, as_user):
    story = session_story(acme)
    old = remember(acme, "Release notes go to the wiki")
    Memory.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=3))
    html = as_user(bob).get("/w/acme/").content.decode()
    assert "<strong>3</strong> current memories" in html
    assert "<strong>1</strong> session" in html
    # one bar per day, the last of them today's two memories
    chart = html.split('id="created-chart-title"')[1].split("</svg>")[0]
    assert chart.count("<rect") == 30
    # labelled axes: counts up the side, dates along the bottom
    assert 'dy="0.32em">2</text>' in chart
    assert timezone.now().strftime("%b") in chart.split('class="x-labels"')[1]
    assert f"{timezone.now().date().isoformat()}: 2</title>" in html
    # two ids injected, one of them then recalled
    assert "<strong>50%</strong>" in html and "1 of 2 injected memories" in html
    assert f"/w/acme/sessions/{story.session.pk}/" in html


def test_the_range_picker_shows_90_days(acme, bob, as_user):
    html = as_user(bob).get("/w/acme/?days=90").content.decode()
    assert "Growth, last 90 days" in html
    chart = html.split('id="sessions-chart-title"')[1].split("</svg>")[0]
    assert chart.count("<rect") == 90


def test_fading_insights_are_listed_and_inert(acme, bob, as_user):
    memory = remember(acme, f"Always pin the toolchain {SCRIPT}")
    Memory.objects.filter(pk=memory.pk).update(last_accessed=timezone.now() - timedelta(days=400))
    html = as_user(bob).get("/w/acme/").content.decode()
    section = html.split("Fading insights")[1]
    assert f"/w/acme/memories/{memory.pk}/" in section
    assert SCRIPT not in html and ESCAPED_SCRIPT in section


def test_a_viewer_sees_it_and_an_outsider_does_not(acme, victor, mallory, as_user):
    assert as_user(victor).get("/w/acme/").status_code == 200
    outsider = as_user(mallory)
    for method in ("get", "post", "delete"):
        assert getattr(outsider, method)("/w/acme/").status_code == 404
