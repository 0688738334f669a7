"""Fixtures: a real client against the session's real server, a reader of stored events, and
CrewAI handler isolation.

Assertions read events back over the HTTP API (``GET /v1/events``), never from the listener.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from crewai.events import crewai_event_bus

import _events
from _events import read_events
from agentledger.client import Ledger

pytestmark = pytest.mark.crewai


class Stored(_events.Stored):
    """Stored events; tree shapes also compare kinds, models, tool args and answers."""

    def label(self, event: dict[str, Any]) -> tuple[Any, ...]:
        data = event["data"]
        return (
            event["event"],
            data.get("kind"),
            data.get("name") or data.get("tool") or data.get("model"),
            repr(data.get("args")) if "args" in data else None,
            data.get("text") if event["event"] == "llm_end" else None,
        )


@pytest.fixture(autouse=True)
def isolated_bus() -> Iterator[None]:
    """Handlers registered during a test are removed after it (CrewAI's bus is global)."""
    with crewai_event_bus.scoped_handlers():
        yield
        crewai_event_bus.flush(timeout=10.0)


@pytest.fixture
def ledger(ledger_server: Any, agent_name: str) -> Iterator[Ledger]:
    client = Ledger(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name, spill_dir=None
    )
    yield client
    client.close(timeout_s=10.0)


@pytest.fixture
def stored(ledger: Ledger, ledger_server: Any, agent_name: str) -> Callable[[], Stored]:
    """Flush the client, then read this test's events back from the server."""

    def read(agent: str | None = None) -> Stored:
        result = ledger.flush(timeout_s=20.0)
        assert result.complete, result
        return Stored(read_events(ledger_server.url, ledger_server.headers(), agent or agent_name))

    return read
