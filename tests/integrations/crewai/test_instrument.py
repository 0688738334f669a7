"""``instrument()``: the one-line CrewAI integration, its options and the missing extra."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest
from crewai.events import BaseEventListener

from agentledger.client import Ledger
from agentledger.integrations.crewai import LedgerCrewListener, instrument, instrument_crew
from agentledger.protocol import LedgerError

from .conftest import Stored
from .fakes import weather_crew

ReadStored = Callable[..., Stored]


def test_instrument_logs_that_crew_with_the_shared_options(
    ledger: Ledger, stored: ReadStored
) -> None:
    watched, other = weather_crew(), weather_crew()
    listener = instrument(
        watched, ledger, session_id="trip-7", metadata={"config": "v5"}, max_scopes=500
    )
    assert isinstance(listener, LedgerCrewListener)
    assert isinstance(listener, BaseEventListener)
    with listener:
        other.kickoff(inputs={"city": "Oslo"})
        watched.kickoff(inputs={"city": "Paris"})
    assert listener.open_scopes == 0

    s = stored()
    [root] = s.roots()
    assert root["data"]["crew_id"] == str(watched.id)
    assert {e["session_id"] for e in s.events} == {"trip-7"}
    assert all(e["metadata"] == {"config": "v5"} for e in s.events)


def test_instrument_crew_is_the_same_function() -> None:
    assert instrument_crew is instrument


def test_bad_options_are_value_errors_and_ledger_errors(ledger: Ledger) -> None:
    for options in ({"max_scopes": 0}, {"max_field_chars": 0}, {"flush_timeout_s": 0}):
        with pytest.raises(ValueError) as raised:
            instrument(weather_crew(), ledger, **options)  # type: ignore[arg-type]
        assert isinstance(raised.value, LedgerError)


def test_import_without_crewai_is_a_ledger_error() -> None:
    code = (
        "import sys; sys.modules['crewai'] = None\n"
        "from agentledger.protocol import LedgerError\n"
        "try:\n"
        "    import agentledger.integrations.crewai\n"
        "except LedgerError as error:\n"
        "    assert isinstance(error, ImportError)\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert "pip install 'agentledger[crewai]'" in done.stdout


def test_instrument_has_the_shape_of_every_integration() -> None:
    """README, "Integrations": (target, ledger) plus session_id=, metadata=, max_scopes=."""
    from ..shape import assert_one_shape

    assert_one_shape("agentledger.integrations.crewai")
