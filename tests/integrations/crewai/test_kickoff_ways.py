"""Every way CrewAI runs an instrumented crew or flow is logged, or refused with a warning.

CrewAI kicks a crew off synchronously, in a thread (``kickoff_async``), natively async
(``akickoff``), streaming, once per input on copies of the crew (``kickoff_for_each`` and its
async variants), and inside a flow's method. Each test runs one way against the real server and
reads the stored events back.

README, "Integrations" (CrewAI: whichever way a crew runs; other crews refused with a warning).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import pytest
from crewai import Crew

from agentledger.client import Ledger
from agentledger.integrations.crewai import LedgerCrewListener, instrument_crew
from agentledger.protocol import LedgerError

from .conftest import Stored
from .fakes import trip_flow, weather_crew

pytestmark = [pytest.mark.crewai, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

ReadStored = Callable[..., Stored]

#: Events one run of ``weather_crew`` stores (crew, two tasks, agents, model calls, one tool).
EVENTS_PER_RUN = 22

CITIES = [{"city": "Paris"}, {"city": "Oslo"}]


def _assert_runs(s: Stored, listener: LedgerCrewListener, crews: int) -> list[dict[str, Any]]:
    """``crews`` whole runs of the weather crew, each its own root and session."""
    assert listener.internal_errors == 0
    assert listener.refused_kickoffs == 0
    assert listener.open_scopes == 0
    roots = s.roots()
    assert [(r["event"], r["data"]["kind"]) for r in roots] == [("step_start", "crew")] * crews
    assert len(s.events) == EVENTS_PER_RUN * crews
    assert len({r["session_id"] for r in roots}) == crews
    for root in roots:
        assert {e["session_id"] for e in s.events if _root_of(s, e) is root} == {root["session_id"]}
    assert len(s.of("step_end", kind="crew")) == crews
    return roots


def _root_of(s: Stored, event: dict[str, Any]) -> dict[str, Any]:
    while event["parent_id"] is not None:
        event = s.by_id[event["parent_id"]]
    return event


def test_kickoff(ledger: Ledger, stored: ReadStored) -> None:
    crew = weather_crew()
    with instrument_crew(crew, ledger) as listener:
        crew.kickoff(inputs=CITIES[0])
    [root] = _assert_runs(stored(), listener, 1)
    assert root["data"]["crew_id"] == str(crew.id)


def test_kickoff_async(ledger: Ledger, stored: ReadStored) -> None:
    crew = weather_crew()
    with instrument_crew(crew, ledger) as listener:
        asyncio.run(crew.kickoff_async(inputs=CITIES[0]))
    [root] = _assert_runs(stored(), listener, 1)
    assert root["data"]["inputs"] == CITIES[0]


def test_akickoff(ledger: Ledger, stored: ReadStored) -> None:
    crew = weather_crew()
    with instrument_crew(crew, ledger) as listener:
        asyncio.run(crew.akickoff(inputs=CITIES[0]))
    [root] = _assert_runs(stored(), listener, 1)
    assert root["data"]["crew_id"] == str(crew.id)


def test_streaming_kickoff(ledger: Ledger, stored: ReadStored) -> None:
    crew = weather_crew()
    crew.stream = True
    with instrument_crew(crew, ledger) as listener:
        streaming = crew.kickoff(inputs=CITIES[0])
        for _ in streaming:  # type: ignore[union-attr]
            pass
    _assert_runs(stored(), listener, 1)


def test_streaming_for_each_async(ledger: Ledger, stored: ReadStored) -> None:
    crew = weather_crew()
    crew.stream = True

    async def run() -> None:
        streaming = await crew.kickoff_for_each_async(inputs=CITIES)
        async for _ in streaming:  # type: ignore[union-attr]
            pass

    with instrument_crew(crew, ledger) as listener:
        asyncio.run(run())
    _assert_runs(stored(), listener, len(CITIES))


def _for_each_way(crew: Crew, way: str) -> Any:
    if way == "kickoff_for_each":
        return crew.kickoff_for_each(inputs=CITIES)
    method = getattr(crew, way)
    return asyncio.run(method(inputs=CITIES))


@pytest.mark.parametrize("way", ["kickoff_for_each", "kickoff_for_each_async", "akickoff_for_each"])
def test_for_each_runs_copies_and_each_copy_is_logged(
    ledger: Ledger, stored: ReadStored, way: str
) -> None:
    crew = weather_crew()
    with instrument_crew(crew, ledger) as listener:
        results = _for_each_way(crew, way)
    assert len(results) == len(CITIES)
    roots = _assert_runs(stored(), listener, len(CITIES))
    # CrewAI runs copies, under ids of their own
    assert {r["data"]["crew_id"] for r in roots}.isdisjoint({str(crew.id)})
    assert sorted(r["data"]["inputs"]["city"] for r in roots) == ["Oslo", "Paris"]


def test_a_copy_of_a_copy_is_logged(ledger: Ledger, stored: ReadStored) -> None:
    crew = weather_crew()
    with instrument_crew(crew, ledger) as listener:
        crew.copy().copy().kickoff(inputs=CITIES[1])
    [root] = _assert_runs(stored(), listener, 1)
    assert root["data"]["inputs"] == CITIES[1]


def test_crew_inside_a_flow_run_async(ledger: Ledger, stored: ReadStored) -> None:
    crew = weather_crew()
    with instrument_crew(crew, ledger) as listener:
        asyncio.run(trip_flow(crew).kickoff_async())
    _assert_runs(stored(), listener, 1)


def test_an_instrumented_flow_logs_its_methods_and_the_crew_they_run(
    ledger: Ledger, stored: ReadStored
) -> None:
    flow = trip_flow(weather_crew())
    other = trip_flow(weather_crew())
    with instrument_crew(flow, ledger) as listener:
        asyncio.run(flow.akickoff())
        other.kickoff()  # another flow object: not this target
    assert listener.internal_errors == 0
    s = stored()
    [root] = s.roots()
    assert (root["data"]["kind"], root["data"]["name"]) == ("flow", "TripFlow")
    assert {e["data"]["name"] for e in s.kids(root, "step_start")} == {"pick_city", "forecast"}
    assert len(s.of("step_start", kind="crew")) == 1
    assert len(s.events) == EVENTS_PER_RUN + 6  # the crew run, flow and two methods
    assert listener.refused_kickoffs == 1  # the other flow of the same class


def test_a_lookalike_crew_is_refused_with_a_warning(
    ledger: Ledger, stored: ReadStored, caplog: pytest.LogCaptureFixture
) -> None:
    """A crew built again from the same definition is not a copy CrewAI made: it is not
    logged, and the listener says so instead of leaving a silent gap."""
    crew, lookalike = weather_crew(), weather_crew()
    with (
        caplog.at_level(logging.WARNING, logger="agentledger"),
        instrument_crew(crew, ledger) as listener,
    ):
        lookalike.kickoff(inputs=CITIES[0])
    assert listener.refused_kickoffs == 1
    [warning] = [r for r in caplog.records if "not logged" in r.getMessage()]
    assert warning.name == "agentledger"
    assert str(lookalike.id) in warning.getMessage()
    assert stored().events == []


def test_instrument_refuses_what_it_cannot_log(ledger: Ledger) -> None:
    with pytest.raises(TypeError) as raised:
        instrument_crew(object(), ledger)
    assert isinstance(raised.value, LedgerError)
