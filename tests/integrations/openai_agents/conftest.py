"""Fixtures: a real client of the session's real ledger server, the processor as the SDK's only
trace processor (the SDK's own exporter would try to reach its vendor), and a reader of the
stored events. Assertions read events back over the HTTP API."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import agents
import pytest

from _events import Stored, read_events
from agentledger.client import Ledger
from agentledger.integrations.openai_agents import LedgerTracingProcessor


@pytest.fixture
def ledger(ledger_server: Any, agent_name: str) -> Iterator[Ledger]:
    client = Ledger(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name, spill_dir=None
    )
    yield client
    client.close(timeout_s=10.0)


@pytest.fixture
def processor(ledger: Ledger) -> Iterator[LedgerTracingProcessor]:
    made = LedgerTracingProcessor(ledger)
    agents.set_trace_processors([made])
    yield made
    agents.set_trace_processors([])


@pytest.fixture
def stored(ledger: Ledger, ledger_server: Any, agent_name: str) -> Callable[[], Stored]:
    """Flush the client, then read this test's events back from the server."""

    def read() -> Stored:
        assert ledger.flush(timeout_s=20.0) is not None
        return Stored(read_events(ledger_server.url, ledger_server.headers(), agent_name))

    return read
