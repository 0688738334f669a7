"""``instrument()``: the one-line LiveKit integration, its options and the missing extra."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from livekit.agents import AgentSession

from agentledger.client import Ledger
from agentledger.integrations.livekit import LedgerSessionObserver, instrument
from agentledger.protocol import LedgerError

from .conftest import WeatherAgent
from .fakes import FakeLLM, Reply

pytestmark = pytest.mark.livekit

StoredReader = Any


async def test_instrument_attaches_with_the_shared_options(
    ledger: Ledger, stored: StoredReader
) -> None:
    model = FakeLLM(
        [
            Reply("req-1", calls=[("get_weather", {"city": "Paris"}, "call-1")]),
            Reply("req-2", text="It is sunny in Paris."),
        ]
    )
    async with AgentSession[Any](llm=model) as session:
        observer = instrument(
            session, ledger, session_id="call-8", metadata={"config": "v6"}, max_scopes=8
        )
        assert isinstance(observer, LedgerSessionObserver)
        await session.start(WeatherAgent())
        await session.run(user_input="Weather in Paris?")
    assert observer.session_id == "call-8"

    s = stored()
    assert {e["session_id"] for e in s.events} == {"call-8"}
    assert all(e["metadata"] == {"config": "v6"} for e in s.events)
    assert s.one("tool_result")["data"]["result"] == "sunny in Paris"
    assert s.one("assistant_response")["data"]["text"] == "It is sunny in Paris."
    assert [e["event"] for e in s.events][-1] == "session_end"


async def test_attaching_twice_is_a_runtime_error_and_a_ledger_error(ledger: Ledger) -> None:
    async with AgentSession[Any](llm=FakeLLM([])) as session:
        observer = instrument(session, ledger, level="transcript")
        with pytest.raises(RuntimeError, match="already attached") as raised:
            observer.attach(session)
        assert isinstance(raised.value, LedgerError)
        observer.detach()


def test_bad_options_are_value_errors_and_ledger_errors(ledger: Ledger) -> None:
    for options in ({"max_scopes": 0}, {"level": "chatty"}):
        with pytest.raises(ValueError) as raised:
            LedgerSessionObserver(ledger, **options)  # type: ignore[arg-type]
        assert isinstance(raised.value, LedgerError)


def test_import_without_livekit_is_a_ledger_error() -> None:
    code = (
        "import sys; sys.modules['livekit'] = None\n"
        "from agentledger.protocol import LedgerError\n"
        "try:\n"
        "    import agentledger.integrations.livekit\n"
        "except LedgerError as error:\n"
        "    assert isinstance(error, ImportError)\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert "pip install 'agentledger[livekit]'" in done.stdout


def test_instrument_has_the_shape_of_every_integration() -> None:
    """README, "Integrations": (target, ledger) plus session_id=, metadata=, max_scopes=."""
    from ..shape import assert_one_shape

    assert_one_shape("agentledger.integrations.livekit")
