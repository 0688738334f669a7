"""Fixtures: a fake OpenAI-compatible server over real HTTP, the real ``openai`` clients
pointed at it and instrumented, a real client of the session's real ledger server, and a
reader of the stored events.

Assertions read events back over the HTTP API (``GET /v1/events``), never from the capture.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import openai
import pytest

from _events import Stored, read_events
from agentledger.client import Ledger
from agentledger.integrations.openai import instrument_openai

from .fake_api import FakeOpenAI, FakeServer


@pytest.fixture
def api() -> Iterator[FakeOpenAI]:
    with FakeServer() as state:
        yield state


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

    def read() -> Stored:
        result = ledger.flush(timeout_s=20.0)
        assert result is not None
        return Stored(read_events(ledger_server.url, ledger_server.headers(), agent_name))

    return read


@pytest.fixture
def plain_client(api: FakeOpenAI) -> Iterator[openai.OpenAI]:
    client = openai.OpenAI(base_url=api.url, api_key="sk-test-not-a-key", max_retries=0)
    yield client
    client.close()


@pytest.fixture
def client(plain_client: openai.OpenAI, ledger: Ledger) -> openai.OpenAI:
    return instrument_openai(plain_client, ledger, session_id="chat-1")


@pytest.fixture
async def aclient(api: FakeOpenAI, ledger: Ledger) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(base_url=api.url, api_key="sk-test-not-a-key", max_retries=0)
    yield instrument_openai(client, ledger, session_id="chat-async")
    await client.close()
