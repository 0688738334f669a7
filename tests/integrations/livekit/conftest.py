"""Fixtures: a real client against the session's real server, offline LiveKit sessions, and a
reader of stored events.

Assertions read events back over the HTTP API (``GET /v1/events``), never from the observer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from livekit.agents import Agent, AgentSession, RunContext, function_tool
from livekit.agents.voice.run_result import RunResult

from _events import Stored, read_events
from agentledger.client import Ledger
from agentledger.integrations.livekit import LedgerSessionObserver

from .fakes import FakeLLM, Reply

pytestmark = pytest.mark.livekit


class WeatherAgent(Agent):
    """A tool-using agent: two plain tools and one that raises."""

    def __init__(self) -> None:
        super().__init__(instructions="You answer weather questions in one sentence.")

    @function_tool
    async def get_weather(self, context: RunContext, city: str) -> str:
        """The current weather in a city."""
        return f"sunny in {city}"

    @function_tool
    async def get_time(self, context: RunContext, city: str) -> str:
        """The local time in a city."""
        return f"noon in {city}"

    @function_tool
    async def book_flight(self, context: RunContext, city: str, seats: int) -> str:
        """Book a flight (always fails: the booking backend is down)."""
        raise RuntimeError(f"booking backend down, cannot book {seats} seat(s) to {city}")


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
        assert result.complete, result
        return Stored(read_events(ledger_server.url, ledger_server.headers(), agent_name))

    return read


@dataclass
class Ran:
    """What an offline session produced on LiveKit's side."""

    observer: LedgerSessionObserver
    results: list[RunResult[Any]]
    model: FakeLLM


RunSession = Callable[..., Awaitable[Ran]]


@pytest.fixture
def run_session(ledger: Ledger) -> RunSession:
    """Run an offline ``AgentSession`` (fake LLM, no STT/TTS/room) with the observer attached.

    Args (of the returned coroutine function):
        replies: the scripted model replies, one per model request.
        inputs: user inputs, one ``session.run(user_input=...)`` each.
        agent: the agent instance (default :class:`WeatherAgent`).
        level: observer level.
        before_run: optional ``callback(session)`` called after ``start`` (e.g. mock_tools).
    """

    async def run(
        replies: Sequence[Reply],
        inputs: Sequence[str],
        *,
        agent: Agent | None = None,
        level: Any = "standard",
        before_run: Callable[[AgentSession[Any]], Any] | None = None,
        observer: LedgerSessionObserver | None = None,
    ) -> Ran:
        model = FakeLLM(replies)
        obs = observer or LedgerSessionObserver(ledger, level=level)
        results: list[RunResult[Any]] = []
        async with AgentSession[Any](llm=model) as session:
            obs.attach(session)
            await session.start(agent or WeatherAgent())
            if before_run is not None:
                before_run(session)
            for text in inputs:
                results.append(await session.run(user_input=text))
        return Ran(obs, results, model)

    return run
