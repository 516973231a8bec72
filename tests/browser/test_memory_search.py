"""Finding things in the memories list, in a real browser (issue #26): real
hits only, marked, announced; facets, pages, sortable headers, the substring
filter."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from memories import services
from memories.services import RememberInput
from tests.browser.conftest import log_in, screenshot
from tests.browser.test_dashboard import HOSTILE
from tests.dashboard.search_corpus import PARTITION_NOTES, all_notes
from tests.dashboard.stories import remember

pytestmark = pytest.mark.django_db(transaction=True)


def seed(workspace, texts, **fields):
    services.memory_remember_bulk(
        workspace=workspace, items=[RememberInput(text=t, **fields) for t in texts]
    )


def test_a_search_lists_real_hits_marked_and_says_how_many(page, acme, alice):
    seed(acme, all_notes())
    remember(acme, f"Partition notes can hold hostile text too {HOSTILE}")
    log_in(page, "alice", "alice-password")
    page.goto("/w/acme/memories/")
    search = page.get_by_role("searchbox", name="Search")
    search.press_sequentially("partition", delay=20)
    page.wait_for_url(re.compile(r"q=partition"))
    # the live region outside the swapped table says how many, for screen readers
    announced = page.locator("#list-status")
    expect(announced).to_have_text("5 results")
    assert announced.get_attribute("aria-live") == "polite"
    rows = page.locator("#memory-table tbody tr")
    assert rows.count() == 5
    texts = rows.locator("td.memory-text").all_inner_texts()
    assert {t for t in texts if t in PARTITION_NOTES} == set(PARTITION_NOTES)
    marks = page.locator("#memory-table mark").all_inner_texts()
    assert marks and {m.lower() for m in marks} == {"partition"}
    assert page.evaluate("window.pwned") is None
    screenshot(page, "search-real-hits")

    # a question worded differently still finds its answer, alone at the top
    search.fill("who should I ask about billing problems")
    page.wait_for_url(re.compile(r"q=who"))
    expect(rows.first).to_contain_text("Invoices and payment issues")
    expect(announced).to_have_text(re.compile(r"^[12] results?$"))
    screenshot(page, "search-paraphrase")

    search.fill("nonexistentword")
    expect(page.locator("#memory-table p.empty")).to_contain_text("matches “nonexistentword”")
    expect(announced).to_have_text("0 results")
    assert page.problems.found == []


def test_facets_pages_sortable_headers_and_the_substring_filter(page, acme, alice):
    seed(acme, [f"Runbook step {i:03} restarts worker {i}" for i in range(55)], compartment="ops")
    seed(acme, [f"Lesson {i}: deploy only on a green build" for i in range(3)], compartment="lessons")  # fmt: skip
    log_in(page, "alice", "alice-password")
    page.goto("/w/acme/memories/")
    # no control shadows a DOM method of its form (one named "contains" did, breaking scripts)
    assert page.evaluate("typeof document.querySelector('form.filters').contains") == "function"
    compartment = page.get_by_label("Compartment", exact=True)
    assert compartment.locator("option").all_text_contents() == [
        "any compartment",
        "ops (55)",
        "lessons (3)",
    ]

    # choosing a facet value by keyboard swaps the table; the select keeps the focus
    compartment.focus()
    compartment.select_option("lessons")
    page.wait_for_url(re.compile(r"compartment=lessons"))
    expect(page.locator("#list-status")).to_have_text("3 results")
    assert page.evaluate("document.activeElement.id") == "facet-compartment"
    screenshot(page, "search-facets")

    # a search updates the facets' counts with the table
    page.get_by_role("searchbox", name="Search").press_sequentially("restarts worker", delay=20)
    page.wait_for_url(re.compile(r"q=restarts(%20|\+)worker"))
    expect(page.locator("#list-status")).to_have_text("0 results")  # none among the lessons
    expect(compartment.locator("option", has_text="ops")).to_have_text("ops (55)")
    compartment.select_option("ops")
    expect(page.locator("#list-status")).to_have_text("55 results")
    expect(compartment.locator("option", has_text="lessons")).to_have_count(0)

    # pages, with the total
    pager = page.get_by_role("navigation", name="Pages")
    expect(pager).to_contain_text("page 1 of 2")
    expect(pager).to_contain_text("(55 in all)")
    pager.get_by_role("link", name="next →").click()
    page.wait_for_url(re.compile(r"page=2"))
    expect(page.locator("#memory-table tbody tr")).to_have_count(5)
    screenshot(page, "search-pages")

    # a header sorts, keeping the search and the facet; it says which way
    page.goto("/w/acme/memories/?compartment=ops")
    page.locator("#memory-table th").get_by_role("link", name="Retention").click()
    page.wait_for_url(re.compile(r"compartment=ops&sort=retention"))
    sorted_by = page.locator('#memory-table th[aria-sort="ascending"]')
    expect(sorted_by).to_have_text(re.compile("Retention"))
    expect(page.locator("#memory-table td.retention").first).to_have_text(re.compile(r"^\d+%$"))
    screenshot(page, "search-sorted")

    # the substring filter: exact text, marked
    page.get_by_label("Text contains").press_sequentially("step 007", delay=20)
    page.wait_for_url(re.compile(r"substring=step"))
    expect(page.locator("#memory-table tbody tr")).to_have_count(1)
    expect(page.locator("#memory-table mark")).to_have_text("step 007")
    screenshot(page, "search-contains")
    assert page.problems.found == []
