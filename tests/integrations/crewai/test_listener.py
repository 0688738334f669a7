"""The CrewAI listener against real crews (offline scripted model) and a real server.

Every assertion reads the stored events back over the HTTP API.
"""

from __future__ import annotations

import random
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from crewai.events import crewai_event_bus

from agentledger.client import Ledger
from agentledger.integrations.crewai import LedgerCrewListener, instrument_crew

from .conftest import Stored
from .fakes import USAGE, flaky_crew, hierarchical_crew, weather_crew

pytestmark = [pytest.mark.crewai, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

ReadStored = Callable[..., Stored]


def descendants(stored: Stored, event: dict[str, Any]) -> list[dict[str, Any]]:
    """Every event below ``event``, depth first."""
    found: list[dict[str, Any]] = []
    for kid in stored.kids(event):
        found.append(kid)
        found.extend(descendants(stored, kid))
    return found


def step(stored: Stored, kind: str, name: str) -> dict[str, Any]:
    return stored.one("step_start", kind=kind, name=name)


def assert_links_complete(stored: Stored) -> None:
    """Every parent is stored and every event shares its root's session."""
    for event in stored.events:
        if event["parent_id"] is not None:
            assert event["parent_id"] in stored.by_id, f"missing parent of {event['event']}"
            assert event["session_id"] == stored.parent(event)["session_id"]


def test_sequential_crew_with_two_tasks_and_a_tool(ledger: Ledger, stored: ReadStored) -> None:
    crew = weather_crew()
    with instrument_crew(crew, ledger) as listener:
        result = crew.kickoff(inputs={"city": "Paris"})
    assert result.raw == "Paris: sunny, 21C. Pack sunglasses."
    assert listener.internal_errors == 0
    assert listener.open_scopes == 0
    assert listener.late_usage_events == 0

    s = stored()
    assert_links_complete(s)
    [root] = s.roots()
    assert root["event"] == "step_start"
    assert root["data"]["kind"] == "crew"
    assert root["data"]["inputs"] == {"city": "Paris"}
    assert root["data"]["process"] == "sequential"
    assert len({e["session_id"] for e in s.events}) == 1
    # ids are derived from CrewAI's own event ids (UUIDv5), not made by the client (UUIDv7)
    assert listener.derived_ids
    assert {uuid.UUID(e["event_id"]).version for e in s.events} == {5}

    lookup, summary = step(s, "task", "lookup"), step(s, "task", "summary")
    assert s.parent(lookup) == root and s.parent(summary) == root
    assert lookup["data"]["description"] == "What is the weather in Paris?"
    assert lookup["data"]["expected_output"] == "One sentence."
    assert lookup["data"]["agent_role"] == "Weather reporter"
    [lookup_end] = s.kids(lookup, "step_end")
    assert lookup_end["data"]["outputs"]["raw"] == "It is sunny and 21C in Paris."

    [agent] = s.kids(lookup, "step_start")
    assert agent["data"]["kind"] == "agent"
    assert agent["data"]["name"] == "Weather reporter"
    assert agent["data"]["tools"] == ["get_weather"]
    below = descendants(s, agent)
    assert [e["event"] for e in below if e["event"] in ("llm_start", "tool_call")] == [
        "llm_start",
        "tool_call",
        "llm_start",
    ]
    [call] = [e for e in below if e["event"] == "tool_call"]
    assert call["data"]["tool"] == "get_weather"
    assert call["data"]["args"] == {"city": "Paris"}  # an object, not a repr string (H04)
    [outcome] = s.kids(call)
    assert outcome["event"] == "tool_result"
    assert outcome["data"]["result"] == "sunny and 21C in Paris"
    assert outcome["data"]["from_cache"] is False
    assert outcome["data"]["duration_ms"] >= 0

    for start in (e for e in below if e["event"] == "llm_start"):
        assert start["data"]["model"] == "scripted-1"
        assert start["data"]["messages"][0]["role"] == "system"
        [end] = s.kids(start)
        assert end["event"] == "llm_end"
        assert end["data"]["call_id"] == start["data"]["call_id"]
    ends = s.of("llm_end")
    assert ends[0]["data"]["text"].startswith("Thought: I need get_weather")

    [crew_end] = s.kids(root, "step_end")
    assert crew_end["data"]["outputs"]["raw"] == result.raw
    # every start is closed: 1 crew + 2 tasks + 2 agents + 2 executor flows
    assert len(s.of("step_start")) == len(s.of("step_end")) == 7


def test_case_h20_tool_failing_on_every_attempt(ledger: Ledger, stored: ReadStored) -> None:
    crew = flaky_crew()
    with instrument_crew(crew, ledger):
        result = crew.kickoff()
    assert result.raw == "The lookup service is down; try later."

    s = stored()
    assert_links_complete(s)
    calls = s.of("tool_call", tool="flaky_lookup")
    assert [c["data"]["attempt"] for c in calls] == [1, 2, 3]
    for call in calls:
        assert call["data"]["args"] == {"query": "order 42"}
        [error] = s.kids(call)  # each error is the child of its own call
        assert error["event"] == "tool_error"
        assert error["data"]["tool"] == "flaky_lookup"
        assert "lookup service unreachable" in error["data"]["error"]
    assert not s.of("tool_result")
    final = s.of("llm_end")[-1]
    assert "Final Answer: The lookup service is down; try later." in final["data"]["text"]
    [task_end] = s.of("step_end", kind="task")
    assert task_end["data"]["outputs"]["raw"] == result.raw


def test_hierarchical_process_with_a_manager(ledger: Ledger, stored: ReadStored) -> None:
    crew = hierarchical_crew()
    with instrument_crew(crew, ledger):
        result = crew.kickoff()
    assert result.raw == "Paris is sunny, 21C."

    s = stored()
    assert_links_complete(s)
    manager = step(s, "agent", "Crew Manager")
    [delegation] = [e for e in descendants(s, manager) if e["event"] == "tool_call"][:1]
    assert delegation["data"]["tool"] == "Delegate work to coworker"
    assert delegation["data"]["args"]["coworker"] == "Weather reporter"
    # the coworker's whole run hangs below the delegation call
    worker = step(s, "agent", "Weather reporter")
    assert s.parent(worker) == delegation
    weather = s.one("tool_call", tool="get_weather")
    assert weather in descendants(s, worker)
    [delegation_result] = s.kids(delegation, "tool_result")
    assert delegation_result["data"]["tool"] == "Delegate work to coworker"
    assert {e["data"]["model"] for e in s.of("llm_start")} == {
        "scripted-manager",
        "scripted-worker",
    }


class RaisingLedger(Ledger):
    """A ledger whose ``log`` fails for some event types (a bug in our own stack)."""

    fail_on: frozenset[str] = frozenset()

    def log(self, event: str, data: Any = None, **kwargs: Any) -> Any:
        if event in self.fail_on:
            raise RuntimeError(f"ledger bug while logging {event}")
        return super().log(event, data, **kwargs)


@pytest.mark.allow_internal_errors
def test_case_h14_listener_raising_does_not_change_the_run(
    ledger_server: Any, agent_name: str, stored: ReadStored, capfd: pytest.CaptureFixture[str]
) -> None:
    baseline = weather_crew().kickoff(inputs={"city": "Paris"})

    broken = RaisingLedger(
        url=ledger_server.url, api_key=ledger_server.api_key, agent=agent_name, spill_dir=None
    )
    broken.fail_on = frozenset({"tool_call", "llm_end", "step_end"})
    crew = weather_crew()
    try:
        with instrument_crew(crew, broken) as listener:
            result = crew.kickoff(inputs={"city": "Paris"})
    finally:
        broken.close(timeout_s=10.0)

    assert result.raw == baseline.raw
    assert result.token_usage == baseline.token_usage
    assert [t.raw for t in result.tasks_output] == [t.raw for t in baseline.tasks_output]
    assert listener.internal_errors == 1 + 3 + 7  # the tool_call, llm_end, step_end failures
    # the tool_call whose llm_end failed, the tool_result whose tool_call failed
    assert listener.orphaned_events == 2
    assert "handler error" not in capfd.readouterr().out  # CrewAI never saw an exception

    s = stored()  # the events that could be logged were
    assert s.types() == {"step_start": 7, "llm_start": 3, "tool_result": 1}
    assert [r["event"] for r in s.roots()] == ["step_start", "tool_result"]


def test_case_h13_token_usage_only_on_llm_end_with_rollups(
    ledger: Ledger, stored: ReadStored
) -> None:
    crew = weather_crew()
    with instrument_crew(crew, ledger):
        result = crew.kickoff(inputs={"city": "Paris"})

    s = stored()
    with_usage = [e for e in s.events if e["data"].get("token_usage") is not None]
    assert {e["event"] for e in with_usage} == {"llm_end"}
    assert len(with_usage) == 3
    for event in with_usage:
        assert event["data"]["token_usage"] == {
            "input_tokens": USAGE["prompt_tokens"],
            "output_tokens": USAGE["completion_tokens"],
            "cache_read_tokens": USAGE["cached_prompt_tokens"],  # a part of input_tokens
            "cache_write_tokens": None,  # not reported: null, never 0
            "reasoning_tokens": None,
            "model": "scripted-1",
        }

    def rollup(kind: str, name: str) -> dict[str, Any]:
        [end] = s.kids(step(s, kind, name), "step_end")
        assert "token_usage" not in end["data"]  # roll-ups live apart, never summed twice
        return dict(end["data"]["rollup"])

    def sums(calls: int) -> dict[str, Any]:
        return {
            "input_tokens": 120 * calls,
            "output_tokens": 30 * calls,
            "cache_read_tokens": 100 * calls,
            "cache_write_tokens": None,
            "reasoning_tokens": None,
        }

    assert rollup("task", "lookup") == {
        "llm_calls": 2,
        "llm_calls_without_usage": 0,
        "token_usage": sums(2),
    }
    assert rollup("task", "summary")["token_usage"] == sums(1)
    crew_rollup = rollup("crew", "crew")
    assert crew_rollup["llm_calls"] == 3
    assert crew_rollup["token_usage"] == sums(3)
    assert result.token_usage.prompt_tokens == crew_rollup["token_usage"]["input_tokens"]
    [crew_end] = s.of("step_end", kind="crew")
    assert crew_end["data"]["crewai_total_tokens"] == result.token_usage.total_tokens


def test_unreported_usage_is_null_not_zero(ledger: Ledger, stored: ReadStored) -> None:
    crew = weather_crew(usage=None)
    with instrument_crew(crew, ledger):
        crew.kickoff(inputs={"city": "Paris"})

    s = stored()
    assert [e["data"]["token_usage"] for e in s.of("llm_end")] == [None, None, None]
    [crew_end] = s.of("step_end", kind="crew")
    assert crew_end["data"]["rollup"] == {
        "llm_calls": 3,
        "llm_calls_without_usage": 3,
        "token_usage": None,
    }


class ShuffledListener(LedgerCrewListener):
    """Hands each event to the listener from a thread pool after a random 0-20 ms delay: an
    exaggerated version of CrewAI's own 10-thread pool, which runs handlers in no order.

    Events emitted within 20 ms of each other reach the listener in any order. A model call
    takes longer than that (the scripted one 50 ms here, a real one 100 ms or more), as the
    listener's tool-call and read links assume: a tool use is linked to the model call that
    ended before it in its scope.
    """

    def __init__(self, *args: Any, seed: int, **kwargs: Any) -> None:
        self.pool = ThreadPoolExecutor(max_workers=8)
        self.rng = random.Random(seed)
        self.rng_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def handle(self, source: Any, event: Any) -> None:
        with self.rng_lock:
            delay_s = self.rng.uniform(0.0, 0.02)

        def later() -> None:
            time.sleep(delay_s)
            super(ShuffledListener, self).handle(source, event)

        self.pool.submit(later)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_out_of_order_delivery_stores_the_same_tree(
    ledger_server: Any, agent_name: str, stored: ReadStored, seed: int
) -> None:
    reordered: dict[bool, int] = {}

    def run(agent: str, shuffled: bool) -> Stored:
        client = Ledger(
            url=ledger_server.url, api_key=ledger_server.api_key, agent=agent, spill_dir=None
        )
        crew = weather_crew(latency_s=0.05)
        listener = ShuffledListener(client, seed=seed) if shuffled else LedgerCrewListener(client)
        crew.kickoff(inputs={"city": "Paris"})
        crewai_event_bus.flush(timeout=10.0)
        if isinstance(listener, ShuffledListener):
            listener.pool.shutdown(wait=True)
        listener.close()
        assert listener.internal_errors == 0
        assert listener.orphaned_events == 0
        reordered[shuffled] = listener.reordered_events
        client.close(timeout_s=10.0)
        return stored(agent)

    in_order = run(f"{agent_name}-ordered", shuffled=False)
    shuffled = run(f"{agent_name}-shuffled", shuffled=True)
    assert reordered[True] > 0  # the delays did deliver events before their causes
    assert len(shuffled.events) == len(in_order.events) == 22
    assert_links_complete(shuffled)
    assert [shuffled.shape(r) for r in shuffled.roots()] == [
        in_order.shape(r) for r in in_order.roots()
    ]


def test_listener_sees_every_crew_and_gives_each_kickoff_a_session(
    ledger: Ledger, stored: ReadStored
) -> None:
    with LedgerCrewListener(ledger) as listener:
        weather_crew().kickoff(inputs={"city": "Paris"})
        weather_crew().kickoff(inputs={"city": "Oslo"})
    assert listener.open_scopes == 0

    s = stored()
    roots = s.roots()
    assert [r["data"]["inputs"] for r in roots] == [{"city": "Paris"}, {"city": "Oslo"}]
    assert len({r["session_id"] for r in roots}) == 2
    assert_links_complete(s)


def test_instrument_crew_logs_only_that_crew(ledger: Ledger, stored: ReadStored) -> None:
    watched, other = weather_crew(), weather_crew()
    with instrument_crew(watched, ledger):
        other.kickoff(inputs={"city": "Oslo"})
        watched.kickoff(inputs={"city": "Paris"})

    s = stored()
    [root] = s.roots()
    assert root["data"]["inputs"] == {"city": "Paris"}
    assert root["data"]["crew_id"] == str(watched.id)
    assert len(s.events) == 22


def test_close_unregisters_and_session_id_is_honoured(ledger: Ledger, stored: ReadStored) -> None:
    crew = weather_crew()
    with instrument_crew(crew, ledger, session_id="trip-42", metadata={"config": "v3"}):
        crew.kickoff(inputs={"city": "Paris"})
    weather_crew().kickoff(inputs={"city": "Oslo"})  # after close: not logged
    crewai_event_bus.flush(timeout=10.0)

    s = stored()
    assert len(s.events) == 22
    assert {e["session_id"] for e in s.events} == {"trip-42"}
    assert all(e["metadata"] == {"config": "v3"} for e in s.events)


def test_import_without_crewai_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['crewai'] = None\n"
        "try:\n"
        "    import agentledger.integrations.crewai\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert "pip install 'agentledger[crewai]'" in done.stdout
