"""How recall reads a query's kind: prose with acronyms and hyphenated words is
not an identifier search, an identifier typed alone is (issue #36)."""

from __future__ import annotations

import pytest

from memories import selectors, services
from memories.services import RememberInput

pytestmark = pytest.mark.django_db

TEXTS = (
    "kannel: a gateway that lets programs send and receive text messages through GSM modems",
    "The SMS API of the billing service is driver-based; see billing/sms.py for the drivers.",
    "GTK is the toolkit the settings window is drawn with.",
)


@pytest.fixture
def filled(acme):
    for text in TEXTS:
        services.memory_remember(workspace=acme, item=RememberInput(text=text))
    return acme


def test_prose_with_acronyms_and_compounds_is_not_an_identifier_query(filled):
    result = selectors.memory_recall(
        workspace=filled, query="driver-based API for sending SMS messages", k=3
    )
    # Read as an identifier search, the entry holding `SMS API` and `driver-based`
    # verbatim would be trusted by its words alone.
    assert "identifier query" not in result.fusion.reason


def test_an_acronym_typed_alone_is_still_searched_for_as_written(filled):
    result = selectors.memory_recall(workspace=filled, query="GTK", k=3)
    assert "identifier query" in result.fusion.reason
    assert result.hits[0].memory.text.startswith("GTK is the toolkit")
