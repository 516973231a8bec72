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
    assert hottest.index(f"#{story.used.pk}</a>") < hottest.index(f"#{story.unused.pk}</a>")


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
