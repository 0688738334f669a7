"""What each CrewAI event was computed from, read back through the server's why() and
impact(): tool calls under the model output that asked for them, model calls under the tool
results they read, a task under the earlier task outputs it was given, delegation.

README, "Integrations" (CrewAI: a task names the earlier outputs it was given).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentledger.client import Ledger
from agentledger.integrations.crewai import instrument_crew

from .conftest import Stored
from .fakes import hierarchical_crew, weather_crew

pytestmark = [pytest.mark.crewai, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

ReadStored = Callable[..., Stored]


def _kinds(result: Any) -> set[tuple[str, str, str]]:
    """``(effect, cause, kind)`` of every edge of a why() or impact() answer."""
    return {(e.effect, e.cause, e.kind) for e in result.edges}


def _cause(event: dict[str, Any], cause: dict[str, Any]) -> str | None:
    """The kind of the stored edge ``event -> cause`` (parent or caused_by), else None."""
    for entry in event.get("caused_by") or []:
        if entry["event_id"] == cause["event_id"]:
            return str(entry.get("kind") or "cause")
    return "parent" if event["parent_id"] == cause["event_id"] else None


def test_two_tasks_the_second_computed_from_the_first(ledger: Ledger, stored: ReadStored) -> None:
    crew = weather_crew()
    with instrument_crew(crew, ledger) as listener:
        crew.kickoff(inputs={"city": "Paris"})
    assert listener.internal_errors == 0

    s = stored()
    lookup, summary = s.one("step_start", name="lookup"), s.one("step_start", name="summary")
    lookup_end = s.one("step_end", name="lookup")
    summary_end = s.one("step_end", name="summary")
    call, result = s.one("tool_call"), s.one("tool_result")
    first_end, second_end, summary_llm_end = s.of("llm_end")
    first_start, second_start, summary_llm = s.of("llm_start")
    executor = s.parent(first_start)

    # The tool call is the child of the model output that asked for it, not of the step.
    assert s.parent(call) is first_end
    assert _cause(call, first_end) == "requested"
    assert call["scope_id"] == executor["event_id"]
    # The next model call reads the tool's result.
    assert s.parent(second_start) is result
    assert _cause(second_start, result) == "read"
    assert second_start["scope_id"] == executor["event_id"]
    # Task 2 is given task 1's output (a sequential crew passes it by default).
    assert _cause(summary, lookup_end) == "context"
    assert s.parent(summary)["data"]["kind"] == "crew"

    why = ledger.why(summary_end["event_id"], depth=1000)
    assert why.chain_complete
    chain = {e.event_id for e in why.chain}
    for event in (lookup_end, result, call, first_end, second_end, summary_llm_end):
        assert event["event_id"] in chain, event["event"]
    assert why.chain[-1].event_id == summary_end["event_id"]
    edges = _kinds(why)
    assert (summary["event_id"], lookup_end["event_id"], "context") in edges
    assert (call["event_id"], first_end["event_id"], "requested") in edges
    assert (second_start["event_id"], result["event_id"], "read") in edges
    assert (first_end["event_id"], first_start["event_id"], "closes") in edges

    impact = ledger.impact(lookup_end["event_id"])
    affected = {e.event_id for e in impact.events}
    for event in (summary, summary_llm, summary_llm_end, summary_end):
        assert event["event_id"] in affected, event["event"]
    assert s.one("step_end", kind="crew")["event_id"] in affected
    # Task 1's own work is a cause of its output, not an effect of it.
    assert not affected & {call["event_id"], result["event_id"], lookup["event_id"]}


def test_a_task_given_no_context_is_not_caused_by_the_earlier_task(
    ledger: Ledger, stored: ReadStored
) -> None:
    crew = weather_crew()
    crew.tasks[1].context = []
    with instrument_crew(crew, ledger):
        crew.kickoff(inputs={"city": "Paris"})
    s = stored()
    summary = s.one("step_start", name="summary")
    assert not summary.get("caused_by")
    impact = ledger.impact(s.one("step_end", name="lookup")["event_id"])
    assert summary["event_id"] not in {e.event_id for e in impact.events}


def test_delegation_is_a_cause_of_the_coworkers_run(ledger: Ledger, stored: ReadStored) -> None:
    crew = hierarchical_crew()
    with instrument_crew(crew, ledger) as listener:
        crew.kickoff()
    assert listener.internal_errors == 0
    s = stored()
    delegate = s.one("tool_call", tool="Delegate work to coworker")
    coworker = s.one("step_start", kind="agent", name="Weather reporter")
    assert _cause(coworker, delegate) == "delegated"
    # What the coworker found reaches the manager's answer.
    weather = s.one("tool_result", tool="get_weather")
    manager_answer = s.of("llm_end", model="scripted-manager")[-1]
    why = ledger.why(manager_answer["event_id"], depth=1000)
    assert why.chain_complete
    assert weather["event_id"] in {e.event_id for e in why.chain}
    assert (coworker["event_id"], delegate["event_id"], "delegated") in _kinds(why)
