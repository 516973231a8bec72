"""The relevance floor: what a hook's recall leaves out rather than fill its block with.

A recall ranks whatever the workspace holds, so a question with one answer
(or none) still gets `k` entries back: once the answer is given, the rest of
the block and the index would be filled with entries the question has nothing
to do with (a cosine of 0.1 or 0.01 is noise, not a weak match). A hook's
block is read by the model on every turn, so it keeps only entries that clear
the floor; an explicit recall (REST, MCP, the CLI) still answers in full.

An entry clears it when its meaning is near the query's (its cosine is at
least FLOOR_COSINE and at least FLOOR_SHARE of the best hit's) or it holds
most of the query's own words (lexical coverage FLOOR_COVERAGE: an
identifier, a path, a name the embedding model cannot place), or when an
earlier question's answer carried it (selectors.answered). For a query in a
script the embedding model cannot read, cosines say nothing: only the words
and the carry count.
"""

from __future__ import annotations

from collections.abc import Sequence

from memories.selectors.fusion import Fusion, Scored
from memories.selectors.recall import Hit

# A cosine below this is unrelated text for the 384-dimension MiniLM family
# (an unrelated note scores 0.0-0.2 against a question; a paraphrased answer 0.35+).
FLOOR_COSINE = 0.2
# ... and so is one far below the best hit: once the answer scores 0.7, 0.2 is filler.
FLOOR_SHARE = 0.35
# An entry holding this share of the query's idf mass matches it by its words.
FLOOR_COVERAGE = 0.5


def _blind(fusion: Fusion) -> bool:
    """Whether cosines say nothing here: the dense arm could not read the query
    (fusion's dense-blind reason), or did not run (no embedder)."""
    return "cannot read" in fusion.reason or fusion.reason == "lexical arm only"


def relevant(scored: Scored | None, cosine: float, floor: float, blind: bool) -> bool:
    if scored is not None and (scored.answered or scored.coverage >= FLOOR_COVERAGE):
        return True
    return not blind and cosine >= floor


def above_floor(hits: Sequence[Hit], fusion: Fusion) -> list[Hit]:
    """The hits that clear the relevance floor (see the module), in their order."""
    if not hits:
        return []
    by_id = {c.id: c for c in fusion.candidates}
    best = max(h.cosine for h in hits)
    floor = max(FLOOR_COSINE, FLOOR_SHARE * best)
    blind = _blind(fusion)
    return [h for h in hits if relevant(by_id.get(int(h.memory.pk)), h.cosine, floor, blind)]
