"""A command-line option asked for as written finds the entry that holds it as an
option, not those that hold the same words bare (issue #36)."""

from __future__ import annotations

import pytest

from memories import selectors, services
from memories.services import RememberInput

pytestmark = pytest.mark.django_db

OPTION = "Add --aws-sigv4 so a transfer can sign its requests the way S3 expects."
BARE = (
    "tests: aws-sigv4 signing of a request with an empty payload, aws-sigv4 twice",
    "docs: aws-sigv4 in the list of auth schemes, aws-sigv4 with a region and service",
    "lib: aws-sigv4 header canonicalisation, aws-sigv4 date handling, aws-sigv4 scope",
)


def test_an_option_with_its_dashes_ranks_the_entry_holding_the_option_first(acme):
    for text in (*BARE, OPTION):
        services.memory_remember(workspace=acme, item=RememberInput(text=text))
    hits = selectors.memory_recall(workspace=acme, query="--aws-sigv4", k=4).hits
    # The bare words occur more often elsewhere (BM25 prefers those); only the
    # exact-case check can tell the option apart, and it must see the dashes.
    assert hits[0].memory.text == OPTION
