"""Fixtures: a real client against the session's real server, and a reader of stored events.

Assertions read events back over the HTTP API (``GET /v1/events``), never from the handler.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from _events import Stored, read_events
from agentledger.client import Ledger
from agentledger.integrations.langchain import LedgerCallbackHandler


@pytest.fixture
def ledger(ledger_server: Any, agent_name: str) -> Iterator[Ledger]:
    client = Ledger(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name, spill_dir=None
    )
    yield client
    client.close(timeout_s=10.0)


@pytest.fixture
def handler(ledger: Ledger) -> LedgerCallbackHandler:
    return LedgerCallbackHandler(ledger)


@pytest.fixture
def stored(ledger: Ledger, ledger_server: Any, agent_name: str) -> Callable[[], Stored]:
    """Flush the client, then read this test's events back from the server."""

    def read() -> Stored:
        result = ledger.flush(timeout_s=20.0)
        assert result is not None
        return Stored(read_events(ledger_server.url, ledger_server.headers(), agent_name))

    return read
