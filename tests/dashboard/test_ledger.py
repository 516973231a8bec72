"""The ledger page: injection → use over time, by source, hottest and never used."""

from __future__ import annotations

from django.utils import timezone

from tests.dashboard.stories import ESCAPED_SCRIPT, SCRIPT, session_story


def test_it_shows_rates_sources_and_the_ids_that_matter(acme, bob, as_user):
    story = session_story(acme)
    html = as_user(bob).get("/w/acme/ledger/").content.decode()
    assert "<strong>50%</strong> used after injection" in html
    today = timezone.now().date().isoformat()
    assert f"<td>{today}</td><td>2</td><td>1</td><td>50%</td>" in html
    by_source = html.split("By source")[1].split("</table>")[0]
    assert "<td>model</td><td>2</td><td>1</td>" in by_source
    never = html.split("Never used")[1]
    assert f"#{story.unused.pk}</a>" in never and f"#{story.used.pk}</a>" not in never
    assert ESCAPED_SCRIPT in never and SCRIPT not in html
    hottest = html.split("Hottest ids")[1].split("</table>")[0]
    assert f"#{story.used.pk}</a>" in hottest
    # injected, never used: it is listed once, under "Never used", not as hot too
    assert f"#{story.unused.pk}</a>" not in hottest


def test_a_low_use_rate_is_drawn_to_its_own_scale(acme, bob, as_user):
    from contexts.models import AgentSession
    from memories import services

    session = AgentSession.objects.create(workspace=acme, external_id="busy")
    ids = list(range(10_001, 10_201))  # ids only: the ledger keeps no link to the rows
    services.ledger_record(workspace=acme, session=session, memory_ids=ids, kind="injected")
    services.ledger_record(workspace=acme, session=session, memory_ids=ids[:1], kind="recalled")
    html = as_user(bob).get("/w/acme/ledger/").content.decode()
    rate = html.split('id="rate-chart-title"')[1].split("</svg>")[0]
    # 1 of 200 is 0.5 %: the axis tops out at 0.5 %, not 100 %, and says so in its labels
    labels = [part.split("</text>")[0] for part in rate.split('dy="0.32em">')[1:]]
    assert labels[-1] == "0.5%" and "100%" not in labels
    today = timezone.now().date().isoformat()
    assert f"{today}: 0.5%</title>" in rate
    assert f"<td>{today}</td><td>200</td><td>1</td><td>0.5%</td>" in html


def test_the_range_picker_redraws_the_days_and_keeps_other_parameters(acme, bob, as_user):
    session_story(acme)
    html = as_user(bob).get("/w/acme/ledger/?days=7&keep=me").content.decode()
    assert "Over the last 7 days" in html
    chart = html.split('id="injected-chart-title"')[1].split("</svg>")[0]
    assert chart.count("<rect") == 7
    picker = html.split('aria-label="Time range"')[1].split("</nav>")[0]
    assert 'href="?days=90&amp;keep=me"' in picker
    assert 'href="?days=7&amp;keep=me" aria-current="true"' in picker
    # an unknown range falls back to 30 days
    html = as_user(bob).get("/w/acme/ledger/?days=4000").content.decode()
    assert "Over the last 30 days" in html


def test_a_forgotten_memory_keeps_its_history(acme, bob, as_user):
    from memories import services

    story = session_story(acme)
    services.memory_forget(workspace=acme, memory=story.unused)
    html = as_user(bob).get("/w/acme/ledger/").content.decode()
    assert "<td>forgotten</td><td>1</td><td>0</td>" in html


def test_empty_and_forbidden(acme, bob, mallory, as_user):
    assert "Nothing has been injected into a session yet" in (
        as_user(bob).get("/w/acme/ledger/").content.decode()
    )
    outsider = as_user(mallory)
    for method in ("get", "post"):
        assert getattr(outsider, method)("/w/acme/ledger/").status_code == 404
