"""Flows, a crew inside a flow, and crews running in parallel threads."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from agentledger.client import Ledger
from agentledger.integrations.crewai import LedgerCrewListener, instrument_crew

from .conftest import Stored, read_events
from .fakes import trip_flow, weather_crew

pytestmark = [pytest.mark.crewai, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

ReadStored = Callable[..., Stored]


def test_flow_methods_are_steps_and_the_crew_hangs_below_its_method(
    ledger: Ledger, stored: ReadStored
) -> None:
    flow = trip_flow(weather_crew())
    with LedgerCrewListener(ledger) as listener:
        result = flow.kickoff()
    assert result == "Paris: sunny, 21C. Pack sunglasses."
    assert listener.internal_errors == 0

    s = stored()
    [root] = s.roots()
    assert (root["event"], root["data"]["kind"], root["data"]["name"]) == (
        "step_start",
        "flow",
        "TripFlow",
    )
    methods = {e["data"]["name"]: e for e in s.kids(root, "step_start")}
    assert set(methods) == {"pick_city", "forecast"}
    [pick_end] = s.kids(methods["pick_city"], "step_end")
    assert pick_end["data"]["outputs"] == "Paris"
    [crew] = s.kids(methods["forecast"], "step_start")
    assert crew["data"]["kind"] == "crew"
    assert crew["data"]["inputs"] == {"city": "Paris"}
    [flow_end] = s.kids(root, "step_end")
    assert flow_end["data"]["outputs"] == result
    assert {e["session_id"] for e in s.events} == {root["session_id"]}


def test_instrumented_crew_inside_an_unlogged_flow_is_its_own_root(
    ledger: Ledger, stored: ReadStored
) -> None:
    crew = weather_crew()
    with instrument_crew(crew, ledger):
        trip_flow(crew).kickoff()

    s = stored()
    [root] = s.roots()
    assert root["data"]["kind"] == "crew"
    assert not s.of("step_start", kind="flow_method")
    assert len(s.events) == 22


def test_crews_in_parallel_threads_each_get_a_correct_tree(
    ledger_server: Any, agent_name: str
) -> None:
    """Two instrumented crews kicked off at once in two threads (field case H17's setting):
    no shared state between the listeners, no cross-links."""
    cities = ("Paris", "Oslo")
    ledgers = {
        city: Ledger(
            url=ledger_server.url,
            api_key=ledger_server.api_key,
            agent=f"{agent_name}-{city.lower()}",
            spill_dir=None,
        )
        for city in cities
    }
    crews = {city: weather_crew(city=city) for city in cities}
    listeners = {city: instrument_crew(crews[city], ledgers[city]) for city in cities}
    results: dict[str, str] = {}

    def run(city: str) -> None:
        results[city] = crews[city].kickoff(inputs={"city": city}).raw

    threads = [threading.Thread(target=run, args=(city,)) for city in cities]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for city in cities:
        listeners[city].close()
        assert listeners[city].internal_errors == 0
        assert listeners[city].late_usage_events == 0
        ledgers[city].close(timeout_s=10.0)
        s = Stored(
            read_events(ledger_server.url, ledger_server.headers(), f"{agent_name}-{city.lower()}")
        )
        assert len(s.events) == 22
        [root] = s.roots()
        assert root["data"]["inputs"] == {"city": city}
        assert all(e["parent_id"] in s.by_id for e in s.events if e["parent_id"])
        [call] = s.of("tool_call")
        assert call["data"]["args"] == {"city": city}
        [crew_end] = s.of("step_end", kind="crew")
        assert crew_end["data"]["rollup"]["llm_calls"] == 3
    assert set(results) == set(cities)


def test_listener_created_mid_run_logs_the_rest_as_roots(
    ledger: Ledger, stored: ReadStored
) -> None:
    """Events whose enclosing starts happened before the listener existed never wait forever:
    they are logged (as roots, the vocabulary's rule for an unknown enclosing run)."""
    from crewai import Agent, Crew, Task
    from crewai.tools import tool

    from .fakes import ScriptedLLM, action, final

    made: list[LedgerCrewListener] = []

    @tool("attach_ledger")
    def attach_ledger(reason: str) -> str:
        """Start logging now."""
        made.append(LedgerCrewListener(ledger, max_wait_s=0.05))
        return "attached"

    llm = ScriptedLLM(
        model="scripted-1",
        script=[action("attach_ledger", '{"reason": "late"}'), final("done")],
    )
    agent = Agent(role="Late", goal="g", backstory="b", llm=llm, tools=[attach_ledger])
    crew = Crew(agents=[agent], tasks=[Task(description="d", expected_output="e", agent=agent)])
    assert crew.kickoff().raw == "done"
    [listener] = made
    listener.close()
    assert listener.internal_errors == 0
    assert listener.orphaned_events > 0

    s = stored()
    # from the tool's end on: tool_result, the 2nd model call, and every step end
    assert s.types()["llm_start"] == 1
    assert {e["data"].get("kind") for e in s.of("step_end")} >= {"task", "agent", "crew"}
    assert all(e["parent_id"] is None or e["parent_id"] in s.by_id for e in s.events)
