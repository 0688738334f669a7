"""What each LiveKit event was computed from, read back through the server's why() and
impact(): the user's words, the model output that asked for a tool, the tool result the next
request read, the handoff that made an agent current.

README, "Integrations" (LiveKit: a causal graph per turn; the handoff causes the new agent's turn).
"""

from __future__ import annotations

from typing import Any

import pytest

from agentledger.client import Ledger

from .conftest import RunSession, Stored
from .fakes import HANDOFF_REPLIES, HANDOFF_TURNS, FrontDesk, Reply

pytestmark = pytest.mark.livekit

StoredReader = Any


def _edges(result: Any) -> set[tuple[str, str, str]]:
    return {(e.effect, e.cause, e.kind) for e in result.edges}


def _edge(effect: dict[str, Any], cause: dict[str, Any], kind: str) -> tuple[str, str, str]:
    return effect["event_id"], cause["event_id"], kind


async def test_why_an_answer_reaches_the_tool_result_its_call_and_the_user_transcript(
    run_session: RunSession, stored: StoredReader, ledger: Ledger
) -> None:
    await run_session(
        [
            Reply("req-1", calls=[("get_weather", {"city": "Paris"}, "call-1")]),
            Reply("req-2", text="It is sunny in Paris."),
        ],
        ["What's the weather in Paris?"],
    )
    s: Stored = stored()
    user = s.one("user_message")
    first, second = s.of("llm_start")
    end_1, end_2 = s.one("llm_end", request_id="req-1"), s.one("llm_end", request_id="req-2")
    call, result = s.one("tool_call"), s.one("tool_result")
    answer = s.one("assistant_response")
    agent = s.one("step_start", kind="agent")

    why = ledger.why(answer["event_id"], depth=1000)
    assert why.chain_complete
    chain = [e.event_id for e in why.chain]
    for event in (user, first, end_1, call, result, second, end_2):
        assert event["event_id"] in chain, event["event"]
    assert chain[-1] == answer["event_id"]
    # causes come before their effects
    assert chain.index(user["event_id"]) < chain.index(call["event_id"])
    assert chain.index(result["event_id"]) < chain.index(second["event_id"])
    edges = _edges(why)
    assert _edge(first, user, "read") in edges
    assert _edge(call, end_1, "requested") in edges
    assert _edge(result, call, "closes") in edges
    assert _edge(second, result, "read") in edges
    assert _edge(answer, end_2, "produced") in edges
    # the agent step is where they ran (scope), not why
    assert agent["event_id"] not in chain
    assert {call["scope_id"], second["scope_id"], answer["scope_id"]} == {agent["event_id"]}

    impact = ledger.impact(result["event_id"])
    affected = {e.event_id for e in impact.events}
    assert {second["event_id"], end_2["event_id"], answer["event_id"]} <= affected
    assert user["event_id"] not in affected


async def test_after_a_handoff_the_new_agents_turn_is_caused_by_the_handoff(
    run_session: RunSession, stored: StoredReader, ledger: Ledger
) -> None:
    await run_session(
        HANDOFF_REPLIES,
        HANDOFF_TURNS,
        agent=FrontDesk(),
    )
    s: Stored = stored()
    session_start = s.one("session_start")
    handed_off = s.one("tool_result", tool="transfer_to_billing")
    billing = s.one("step_start", name="billing_agent")
    assert s.parent(billing) is handed_off
    [greeting_call, answer_call] = s.of("llm_start", agent="billing_agent")
    answer = s.one("assistant_response", text="You owe 10 euros.")

    why = ledger.why(answer["event_id"], depth=1000)
    assert why.chain_complete
    edges = _edges(why)
    assert _edge(billing, handed_off, "handoff") in edges
    assert _edge(answer_call, billing, "handoff") in edges
    assert _edge(greeting_call, billing, "handoff") in edges
    assert handed_off["event_id"] in {e.event_id for e in why.chain}
    # the new agent's turn does not hang off the session start
    assert s.parent(answer_call)["event"] == "user_message"
    assert s.parent(s.parent(answer_call))["event"] == "assistant_response"
    assert session_start["event_id"] in why.roots
    impact = ledger.impact(handed_off["event_id"])
    assert answer["event_id"] in {e.event_id for e in impact.events}
