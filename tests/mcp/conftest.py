"""The MCP tests' `served`: the run's one real `memflow serve` (tests/conftest.py),
against the test database.

The tests ask for `transactional_db`, so what they write is committed and the
server process sees it; the server reads the same database through a
`DATABASE_URL` built from the test connection.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.memflow_site.helpers import Served


@pytest.fixture
def served(memflow_server: Served) -> Served:
    return memflow_server


@pytest.fixture
def scratchpad_on(acme: Any) -> Any:
    """acme with its scratchpad knob on (off by default), so the scratch tools are served."""
    acme.settings = {**(acme.settings or {}), "scratchpad": True}
    acme.save(update_fields=["settings"])
    return acme
