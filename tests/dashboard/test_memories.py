"""The memories list: filters by age and state key, sorting, status, pagination
that keeps the filters, and consolidating a ticked selection."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memories import services
from memories.models import Memory, MemoryEvidence
from memories.services import RememberInput
from tests.dashboard.stories import ESCAPED_SCRIPT, SCRIPT, remember


def ids_in_order(html: str) -> list[int]:
    """The memory ids of the table's rows, top to bottom."""
    body = html.split("<tbody>")[1].split("</tbody>")[0]
    return [int(row.split("/memories/")[1].split("/")[0]) for row in body.split("<tr")[1:]]


def aged(memory: Memory, days: float, **fields: object) -> Memory:
    """Back-date a memory (the services stamp `now`)."""
    then = timezone.now() - timedelta(days=days)
    Memory.objects.filter(pk=memory.pk).update(
        created_at=then, valid_from=then, last_accessed=then, **fields
    )
    memory.refresh_from_db()
    return memory


def test_age_filters_keep_what_was_created_in_the_window(acme, bob, as_user):
    fresh = remember(acme, "Fresh: the linter is ruff")
    month = aged(remember(acme, "Month old: the queue is NATS"), 40)
    ancient = aged(remember(acme, "Ancient: we used SVN"), 400)
    client = as_user(bob)
    assert ids_in_order(client.get("/w/acme/memories/?within=7").content.decode()) == [fresh.pk]
    assert ids_in_order(client.get("/w/acme/memories/?older=30").content.decode()) == [
        month.pk,
        ancient.pk,
    ]
    both = client.get("/w/acme/memories/?within=365&older=30").content.decode()
    assert ids_in_order(both) == [month.pk]
    none = client.get("/w/acme/memories/?within=1&older=30").content.decode()
    assert "No memories match these filters." in none


def test_the_state_key_filter_and_its_suggestions(acme, bob, as_user):
    services.memory_remember(
        workspace=acme,
        item=RememberInput(text="deploy target is prod", state_key="deploy.target", state_value="prod"),
    )  # fmt: skip
    remember(acme, "Unrelated note about lunch")
    client = as_user(bob)
    html = client.get("/w/acme/memories/?state_key=deploy.target").content.decode()
    assert "deploy target is prod" in html and "lunch" not in html
    assert '<option value="deploy.target">' in html  # offered in the datalist


def test_status_current_superseded_and_all(acme, bob, as_user):
    old = remember(acme, "The queue is RabbitMQ")
    new = services.memory_supersede(workspace=acme, memory=old, text="The queue is NATS")
    client = as_user(bob)
    assert ids_in_order(client.get("/w/acme/memories/").content.decode()) == [new.pk]
    superseded = client.get("/w/acme/memories/?status=superseded").content.decode()
    assert (
        ids_in_order(superseded) == [old.pk] and '<span class="tag">superseded</span>' in superseded
    )
    assert set(ids_in_order(client.get("/w/acme/memories/?status=all").content.decode())) == {
        old.pk,
        new.pk,
    }
    searched = client.get("/w/acme/memories/?q=queue&status=superseded").content.decode()
    assert ids_in_order(searched) == [old.pk]


def test_sorts_newest_oldest_most_accessed_and_fading(acme, bob, as_user):
    a = aged(remember(acme, "Alpha fact about deploys"), 10, access_count=1)
    b = aged(remember(acme, "Bravo fact about deploys"), 200, access_count=3)
    c = aged(remember(acme, "Charlie fact about deploys"), 50, access_count=0)
    client = as_user(bob)

    def order(qs: str) -> list[int]:
        return ids_in_order(client.get(f"/w/acme/memories/?{qs}").content.decode())

    assert order("") == [a.pk, c.pk, b.pk]
    assert order("sort=newest") == [a.pk, c.pk, b.pk]
    assert order("sort=oldest") == [b.pk, c.pk, a.pk]
    assert order("sort=accessed") == [b.pk, a.pk, c.pk]
    # Charlie: 50 days untouched, never used, fades first; Alpha is freshest.
    assert order("sort=retention") == [c.pk, b.pk, a.pk]
    # the same sorts apply to search hits
    assert order("q=deploys&sort=oldest") == [b.pk, c.pk, a.pk]
    html = client.get("/w/acme/memories/?q=deploys&sort=accessed").content.decode()
    assert "most accessed" in html and 'title="Sort by relevance">Score</a></th>' in html


def test_pages_keep_the_filters(acme, bob, as_user):
    services.memory_remember_bulk(
        workspace=acme,
        items=[RememberInput(text=f"Runbook step {i:03} restarts worker {i}", compartment="ops") for i in range(55)]
        + [RememberInput(text="Elsewhere: a note outside ops")],
    )  # fmt: skip
    client = as_user(bob)
    first = client.get("/w/acme/memories/?compartment=ops&sort=oldest").content.decode()
    assert "page 1 of 2" in first and "(55 in all)" in first
    assert "?compartment=ops&amp;sort=oldest&amp;page=2" in first
    assert "Runbook step 000" in first
    second = client.get("/w/acme/memories/?compartment=ops&sort=oldest&page=2").content.decode()
    assert "Runbook step 054" in second and "Elsewhere" not in second
    # the table swapped by htmx carries the same pager
    swapped = client.get(
        "/w/acme/memories/?compartment=ops&sort=oldest", HTTP_HX_REQUEST="true"
    ).content.decode()
    assert swapped.lstrip().startswith('<div id="memory-table">')
    assert 'hx-get="?compartment=ops&amp;sort=oldest&amp;page=2"' in swapped


def test_a_writer_consolidates_a_ticked_selection(acme, bob, as_user):
    a = remember(acme, "Deploys fail when the cache is cold")
    b = remember(acme, f"Warming the cache first fixed the Friday deploy {SCRIPT}")
    client = as_user(bob)
    page = client.get("/w/acme/memories/").content.decode()
    assert "Consolidate the ticked memories" in page
    assert f'value="{a.pk}" form="consolidate-form"' in page
    response = client.post(
        "/w/acme/memories/",
        {"ids": [a.pk, b.pk], "conclusion": "Warm the cache before deploying", "compartment": "Ops"},
        follow=True,
    )  # fmt: skip
    conclusion = Memory.objects.get(text="Warm the cache before deploying")
    assert response.redirect_chain[-1][0] == f"/w/acme/memories/{conclusion.pk}/"
    html = response.content.decode()
    assert f"Consolidated #{a.pk}, #{b.pk} into #{conclusion.pk}" in html
    assert "Rests on" in html and ESCAPED_SCRIPT in html and SCRIPT not in html
    assert conclusion.source == "consolidation" and conclusion.compartment == "ops"
    assert set(MemoryEvidence.objects.filter(conclusion=conclusion).values_list("evidence", flat=True)) == {a.pk, b.pk}  # fmt: skip
    a.refresh_from_db()
    assert a.valid_to is None  # the evidence stays current


def test_consolidation_errors_are_said_in_words_and_keep_the_ticks(acme, bob, evil, as_user):
    a = remember(acme, "Deploys fail when the cache is cold")
    b = remember(acme, "Warming the cache fixed it")
    theirs = remember(evil, "Mallory's secret plan")
    client = as_user(bob)
    cases = [
        ({"ids": [a.pk], "conclusion": "x"}, "at least two distinct memory ids"),
        ({"ids": [a.pk, a.pk], "conclusion": "x"}, "at least two distinct memory ids"),
        ({"ids": [a.pk, b.pk], "conclusion": "   "}, "A memory needs some text."),
        ({"ids": [a.pk, theirs.pk], "conclusion": "x"}, f"No memories [{theirs.pk}]"),
    ]
    for data, words in cases:
        response = client.post("/w/acme/memories/?compartment=&sort=oldest", data)
        assert response.status_code == 400
        html = response.content.decode()
        assert "Nothing was consolidated:" in html and words in html, words
        assert f'value="{a.pk}" form="consolidate-form" id="tick-{a.pk}" aria-label="Tick #{a.pk} to consolidate" checked' in html  # fmt: skip
        assert '<details class="card consolidate" open>' in html
    assert Memory.objects.filter(workspace=acme).count() == 2
    assert not Memory.objects.filter(source="consolidation").exists()


def test_a_viewer_sees_the_list_but_cannot_consolidate(acme, victor, as_user):
    a = remember(acme, "Deploys fail when the cache is cold")
    b = remember(acme, "Warming the cache fixed it")
    client = as_user(victor)
    html = client.get("/w/acme/memories/").content.decode()
    assert "Deploys fail" in html
    assert "Consolidate" not in html and 'type="checkbox"' not in html
    response = client.post("/w/acme/memories/", {"ids": [a.pk, b.pk], "conclusion": "Warm it"})
    assert response.status_code == 403
    assert Memory.objects.filter(workspace=acme).count() == 2


def test_an_outsider_gets_404_and_consolidates_nothing(acme, mallory, as_user):
    a = remember(acme, "Deploys fail when the cache is cold")
    b = remember(acme, "Warming the cache fixed it")
    client = as_user(mallory)
    assert client.get("/w/acme/memories/").status_code == 404
    response = client.post("/w/acme/memories/", {"ids": [a.pk, b.pk], "conclusion": "Mine now"})
    assert response.status_code == 404
    assert not Memory.objects.filter(text="Mine now").exists()


def test_ticks_ride_along_with_searches_and_pages(acme, bob, as_user):
    cold = remember(acme, "Deploys fail when the cache is cold")
    lunch = remember(acme, "Lunch is at noon on Fridays", compartment="food")
    client = as_user(bob)
    # a search that does not find the ticked memory keeps it ticked, below the table
    html = client.get(
        f"/w/acme/memories/?q=lunch&compartment=food&ids={cold.pk}", HTTP_HX_REQUEST="true"
    ).content.decode()
    assert f'value="{lunch.pk}" form="consolidate-form" id="tick-{lunch.pk}"' in html
    elsewhere = html.split('<fieldset class="ticked-elsewhere">')[1].split("</fieldset>")[0]
    assert f'value="{cold.pk}" form="consolidate-form" checked' in elsewhere
    assert "Deploys fail when the cache is cold" in elsewhere
    # one that finds it shows it ticked in its row instead
    found = client.get(f"/w/acme/memories/?ids={cold.pk}").content.decode()
    assert f'aria-label="Tick #{cold.pk} to consolidate" checked' in found
    assert "ticked-elsewhere" not in found
    assert '<details class="card consolidate" open>' in found
    # the filter form and the pager send the ticked boxes along
    assert 'hx-include="#memory-table"' in found


def test_an_overview_conflict_shows_as_one_group_with_the_way_to_settle_it(acme, bob, as_user):
    a = remember(acme, "The release branch is cut every Monday morning.")
    # written as something else and corrected, so remember's dedupe does not fold the two
    b = services.memory_update(
        workspace=acme,
        memory=remember(acme, "Lunch is at noon on Fridays"),
        text="The release branch gets cut every Monday morning.",
    )
    overview = as_user(bob).get("/w/acme/").content.decode()
    assert overview.count('<ul class="conflicts">') == 1
    assert f"#{a.pk}</a>" in overview and f"#{b.pk}</a>" in overview
    assert 'href="/w/acme/triage/">Open the queue and settle these' in overview


def test_a_bad_value_is_dropped_and_the_other_filters_still_apply(acme, bob, as_user):
    ops = remember(acme, "Restart the worker with systemctl", compartment="ops")
    remember(acme, "Lunch is at noon on Fridays")
    html = as_user(bob).get("/w/acme/memories/?compartment=ops&within=5&page=0").content.decode()
    assert ids_in_order(html) == [ops.pk]


def test_the_trash_lists_forgotten_memories_and_restores_them(acme, alice, bob, as_user):
    kept = remember(acme, "The linter is ruff")
    gone = remember(acme, "The queue is RabbitMQ")
    services.memory_forget(workspace=acme, memory=gone, reason="we moved to NATS")
    secret = services.memory_remember(
        workspace=acme, item=RememberInput(text="alice's own note", private=True), user=alice
    ).memory
    services.memory_forget(workspace=acme, memory=secret)
    client = as_user(bob)
    assert ids_in_order(client.get("/w/acme/memories/").content.decode()) == [kept.pk]
    trash = client.get("/w/acme/memories/?status=forgotten").content.decode()
    # Not the current list under another name; alice's private tombstone is hers alone.
    assert ids_in_order(trash) == [gone.pk]
    assert "forgotten " in trash and "Restore" in trash and "forgotten (1)" in trash
    assert ids_in_order(client.get("/w/acme/memories/?status=forgotten&q=queue").content.decode())
    assert "the trash is empty" not in trash
    client.post(f"/w/acme/memories/{gone.pk}/restore/")
    assert set(ids_in_order(client.get("/w/acme/memories/").content.decode())) == {
        kept.pk,
        gone.pk,
    }
    assert "the trash is empty" in client.get("/w/acme/memories/?status=forgotten").content.decode()


def test_the_list_and_the_page_say_who_created_a_memory(acme, alice, bob, as_user):
    mine = services.memory_remember(
        workspace=acme, item=RememberInput(text="The deploy key rotates monthly"), user=alice
    ).memory
    client = as_user(bob)
    assert "by alice" in client.get("/w/acme/memories/").content.decode()
    assert "Created by</dt><dd>alice" in client.get(f"/w/acme/memories/{mine.pk}/").content.decode()


def test_pinning_says_pinned_and_unpinning_says_unpinned(acme, bob, as_user):
    memory = remember(acme, "The CI runs on two cores")
    client = as_user(bob)
    pinned = client.post(f"/w/acme/memories/{memory.pk}/pin/", follow=True).content.decode()
    assert "Pinned: cleanup never removes it." in pinned
    unpinned = client.post(f"/w/acme/memories/{memory.pk}/pin/", follow=True).content.decode()
    assert "Unpinned." in unpinned


def test_an_unknown_action_is_not_found(acme, bob, as_user):
    memory = remember(acme, "The CI runs on two cores")
    assert as_user(bob).post(f"/w/acme/memories/{memory.pk}/explode/").status_code == 404
