"""Migration 0013: memories indexed before stemming are found by their other word forms."""

from __future__ import annotations

import importlib
from collections import Counter
from types import SimpleNamespace

from django.db import connection

from memories import selectors, services
from memories.models import LexicalTerm, Memory
from memories.services import RememberInput

reindex = importlib.import_module("memories.migrations.0013_lex_stemmed").reindex


def _as_before_stemming(workspace) -> None:
    """Rewrite the workspace's index as the tokenizer before 0013 left it: surface words."""
    LexicalTerm.objects.filter(workspace=workspace).delete()
    df: Counter[str] = Counter()
    for memory in Memory.objects.filter(workspace=workspace):
        words = memory.text.lower().replace(".", " ").split()
        memory.lex, memory.lex_len = dict(Counter(words)), len(words)
        memory.save(update_fields=["lex", "lex_len"])
        df.update(memory.lex)
        df[selectors.STAT_DOCS] += 1
        df[selectors.STAT_LENGTH] += memory.lex_len
    LexicalTerm.objects.bulk_create(
        LexicalTerm(workspace=workspace, term=t, df=n) for t, n in df.items()
    )


def test_the_migration_indexes_old_rows_by_their_stems(acme):
    for text in (
        "The payments service retries webhooks five times",
        "Deploys run from the tools folder",
        "Connections to the warehouse are pooled",
    ):
        services.memory_remember(workspace=acme, item=RememberInput(text=text))
    _as_before_stemming(acme)
    stale = selectors.lexical_stats(workspace=acme, terms=["retri", "connect"])
    assert stale.df == {}  # an old index never meets a stemmed query word

    reindex(None, SimpleNamespace(connection=connection))

    stats = selectors.lexical_stats(workspace=acme, terms=["retri", "connect", "webhook"])
    assert stats.docs == 3 and stats.df == {"retri": 1, "connect": 1, "webhook": 1}
    hits = selectors.memory_recall(workspace=acme, query="which webhook retry count", k=1).hits
    assert hits[0].memory.text.startswith("The payments service")
    # The counts are those a fresh index of the same texts has.
    fresh = Counter[str]()
    for memory in Memory.objects.filter(workspace=acme):
        fresh.update(memory.lex.keys())
    assert {t.term: t.df for t in LexicalTerm.objects.filter(workspace=acme)} == {
        **fresh,
        selectors.STAT_DOCS: 3,
        selectors.STAT_LENGTH: sum(m.lex_len for m in Memory.objects.filter(workspace=acme)),
    }
