"""What is current: a changed decision ranks first and is marked; the old one is marked stale."""

from __future__ import annotations

from memories import selectors, services
from memories.services import RememberInput

OLD_DECISION = "we use npm for this repo's packages"
NEW_DECISION = "we switched to pnpm for this repo's packages, npm is gone"
OLD_FACT = "This repo's packages are installed with npm."
NEW_FACT = "This repo's packages are installed with pnpm; npm is no longer used."


def remember(acme, text, source="model"):
    return services.memory_remember(
        workspace=acme, item=RememberInput(text=text, source=source)
    ).memory


def test_a_changed_decision_ranks_above_the_one_it_changes(acme):
    notes = [remember(acme, f"Release note {n}: shipped sprint {n}") for n in range(4)]
    old = remember(acme, OLD_DECISION, "hook")
    fact = remember(acme, OLD_FACT)
    new_fact = services.memory_supersede(workspace=acme, memory=fact, text=NEW_FACT)
    new = remember(acme, NEW_DECISION, "hook")
    result = selectors.memory_recall(
        workspace=acme, query="which package manager do we use for this repo's packages?", k=12
    )
    ids = [h.memory.pk for h in result.hits]
    # The change is recalled, first; what the user typed before it is stale (by the
    # supersede, or by what they typed since); the superseded entry left recall.
    assert ids[0] == new_fact.pk and new.pk in ids, ids
    assert old.pk not in ids or ids.index(old.pk) > ids.index(new.pk), ids
    assert fact.pk not in ids
    assert result.currency.stale.get(old.pk) in (new.pk, new_fact.pk)
    assert "is newer on this" in result.currency.mark(old.pk)
    # Two entries that agree, and a series of notes that only count on, are no change.
    assert new_fact.pk not in result.currency.stale
    assert not {n.pk for n in notes} & set(result.currency.stale), result.currency


def test_it_marks_what_the_model_sees(acme):
    old = remember(acme, "We use npm for our package manager.")
    new = remember(acme, "We use pnpm for our package manager.")
    answer, _, _ = services.memory_recall_answer(
        workspace=acme,
        session=None,
        values={"mode": "block", "k": 5, "query": "which package manager do we use?"},
        filters=selectors.MemoryFilters(),
    )
    block = answer["block"]
    assert block.index(f"[#{new.pk} ") < block.index(f"[#{old.pk} "), block
    assert f"current: replaces #{old.pk}]" in block
    assert f"stale: #{new.pk} is newer on this]" in block
