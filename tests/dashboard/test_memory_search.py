"""Finding things in the memories list (issue #26): only real hits, marked
matches, pages with totals, the substring filter, facets with counts, the
retention column and sortable headers."""

from __future__ import annotations

import re
from datetime import timedelta

from django.utils import timezone

from memories import services
from memories.models import Memory
from memories.services import RememberInput
from tests.dashboard.search_corpus import PARAPHRASES, PARTITION_NOTES, all_notes
from tests.dashboard.stories import ESCAPED_SCRIPT, SCRIPT, remember
from tests.dashboard.test_memories import ids_in_order


def seed(workspace, texts, **fields):
    services.memory_remember_bulk(
        workspace=workspace, items=[RememberInput(text=t, **fields) for t in texts]
    )


def texts_of(html: str) -> list[str]:
    ids = ids_in_order(html)
    by_id = dict(Memory.objects.filter(pk__in=ids).values_list("pk", "text"))
    return [by_id[i] for i in ids]


def test_a_search_shows_only_real_hits_and_a_paraphrase_still_finds_its_answer(acme, bob, as_user):
    seed(acme, all_notes())
    client = as_user(bob)
    partition = client.get("/w/acme/memories/?q=partition").content.decode()
    found = texts_of(partition)
    # The four notes about partitions, none of the 46 weak neighbours recall used to list.
    assert set(found) == set(PARTITION_NOTES)
    assert "4 results for “partition”" in partition
    for question, answer in PARAPHRASES:
        html = client.get("/w/acme/memories/", {"q": question}).content.decode()
        assert texts_of(html)[0] == answer, question
        # A few neighbours sharing a real word (`stored` meets `store`) may follow it.
        assert len(texts_of(html)) <= 6, question
    nothing = client.get("/w/acme/memories/?q=nonexistentword").content.decode()
    assert "Nothing in this workspace matches “nonexistentword”" in nothing


def test_matches_are_marked_and_hostile_text_stays_inert(acme, bob, as_user):
    remember(acme, f"Partition the disk first {SCRIPT}")
    remember(acme, "Tom & Jerry's amp rack <b>partition</b>")
    client = as_user(bob)
    html = client.get("/w/acme/memories/?q=partition").content.decode()
    assert "<mark>Partition</mark> the disk first " + ESCAPED_SCRIPT in html
    assert "&lt;b&gt;<mark>partition</mark>&lt;/b&gt;" in html
    assert SCRIPT not in html and "<b>partition" not in html
    # a term that is also part of an entity marks the text, never the entity
    amp = client.get("/w/acme/memories/?q=amp+rack").content.decode()
    assert "Tom &amp; Jerry&#x27;s <mark>amp</mark> <mark>rack</mark>" in amp
    script = client.get("/w/acme/memories/?q=script+alert").content.decode()
    assert "&lt;<mark>script</mark>&gt;<mark>alert</mark>(&quot;pwned&quot;)" in script


def test_search_results_come_in_pages_with_a_total(acme, bob, as_user):
    seed(acme, [f"Widget {i:02} ships from warehouse {i % 3}" for i in range(60)])
    seed(acme, ["Lunch is at noon"])
    n = Memory.objects.filter(text__startswith="Widget").count()  # dedupe may merge a pair
    assert n > 50
    client = as_user(bob)
    first = client.get("/w/acme/memories/?q=widget").content.decode()
    assert f"{n} results for “widget”" in first
    assert "page 1 of 2" in first and f"({n} in all)" in first
    assert "?q=widget&amp;page=2" in first
    second = client.get("/w/acme/memories/?q=widget&page=2").content.decode()
    assert len(ids_in_order(first)) == 50 and len(ids_in_order(second)) == n - 50
    assert not set(ids_in_order(first)) & set(ids_in_order(second))
    assert "Lunch" not in first + second


def test_the_substring_filter_matches_exactly_in_the_list_the_search_and_the_api(
    acme, bob, as_user, make_key, api
):
    seed(
        acme, ["Backups go to s3://acme-backups/nightly/", "Backups of logs go to s3://acme-logs/"]
    )
    seed(acme, ["Rate is 100%_off for tests", "Rate is 100 percent off"])
    client = as_user(bob)
    html = client.get("/w/acme/memories/?substring=acme-backups/night").content.decode()
    assert texts_of(html) == ["Backups go to s3://acme-backups/nightly/"]
    assert "<mark>acme-backups/night</mark>" in html
    # % and _ are literal characters, not wildcards
    literal = client.get("/w/acme/memories/", {"substring": "100%_"}).content.decode()
    assert texts_of(literal) == ["Rate is 100%_off for tests"]
    searched = client.get("/w/acme/memories/?q=backups&substring=acme-logs").content.decode()
    assert texts_of(searched) == ["Backups of logs go to s3://acme-logs/"]
    rest = api(make_key(bob, workspace=acme)).get(
        "/api/v1/workspaces/acme/memories/", {"contains": "100%_"}
    )
    assert [m["text"] for m in rest.json()["results"]] == ["Rate is 100%_off for tests"]


def option(html: str, name: str, value: str) -> str | None:
    """The label of the option `value` in the select `name`, if offered."""
    select = html.split(f'<select name="{name}"')[1].split("</select>")[0]
    found = re.search(rf'<option value="{re.escape(value)}"( selected)?>([^<]*)</option>', select)
    return found.group(2) if found else None


def test_facets_offer_the_values_that_exist_with_their_counts(acme, bob, as_user):
    seed(acme, [f"Lesson {i}: deploy on a green build" for i in range(3)], compartment="lessons")
    seed(acme, ["Ops: restart the worker", "Ops: rotate the deploy keys"], compartment="ops")
    seed(acme, ["Imported deploy note"], compartment="ops", source="import", app="dsh")
    old = remember(acme, "The deploy queue is RabbitMQ", compartment="ops")
    services.memory_supersede(workspace=acme, memory=old, text="The deploy queue is NATS")
    client = as_user(bob)
    html = client.get("/w/acme/memories/").content.decode()
    assert option(html, "compartment", "lessons") == "lessons (3)"
    # the superseded queue note is not current; its successor is
    assert option(html, "compartment", "ops") == "ops (4)"
    assert option(html, "compartment", "lesson") is None  # only values that exist
    assert option(html, "source", "import") == "import (1)"
    assert option(html, "app", "dsh") == "dsh (1)"
    assert option(html, "status", "superseded") == "superseded (1)"
    # a chosen facet keeps its siblings (counted under the other filters) and
    # narrows the others
    ops = client.get("/w/acme/memories/?compartment=ops").content.decode()
    assert option(ops, "compartment", "lessons") == "lessons (3)"
    assert '<option value="ops" selected>ops (4)</option>' in ops
    assert option(ops, "source", "import") == "import (1)"
    assert option(ops, "source", "model") == "model (3)"
    # while searching, the counts are of the real hits
    searched = client.get("/w/acme/memories/?q=deploy+green+build").content.decode()
    assert option(searched, "compartment", "lessons") == "lessons (3)"
    assert option(searched, "compartment", "ops") is None
    # the htmx swap carries the facets out of band, so their counts follow the search
    swapped = client.get("/w/acme/memories/?q=restart+worker", HTTP_HX_REQUEST="true")
    body = swapped.content.decode()
    assert body.lstrip().startswith('<div id="memory-table">')
    assert '<div id="facets" class="facets" hx-swap-oob="innerHTML">' in body
    assert option(body, "compartment", "ops") == "ops (1)"


def test_retention_column_and_headers_that_sort_keeping_the_filters(acme, bob, as_user):
    seed(acme, ["Note one about ops", "Note two about ops"], compartment="ops")
    fresh = remember(acme, "Note three about ops", compartment="ops")
    Memory.objects.filter(pk=fresh.pk).update(
        text="Note three about ops, edited", updated_at=timezone.now() + timedelta(minutes=1)
    )
    client = as_user(bob)
    html = client.get("/w/acme/memories/?compartment=ops&within=7").content.decode()
    header = html.split("<thead>")[1].split("</thead>")[0]
    for sort, label in [
        ("oldest", "Created"),
        ("updated", "Updated"),
        ("accessed", "Accessed"),
        ("retention", "Retention"),
    ]:
        assert f'href="?compartment=ops&amp;within=7&amp;sort={sort}"' in header, sort
        assert f">{label}</a>" in header
    assert (
        'aria-sort="descending"><a href="?compartment=ops&amp;within=7&amp;sort=oldest"' in header
    )
    assert re.search(r'<td class="retention">\d{1,3}%</td>', html)
    by_retention = client.get("/w/acme/memories/?compartment=ops&sort=retention").content.decode()
    assert 'aria-sort="ascending"><a href="?compartment=ops&amp;sort=retention"' in by_retention
    by_update = client.get("/w/acme/memories/?sort=updated").content.decode()
    assert texts_of(by_update)[0] == "Note three about ops, edited"
