"""LedgerSessionObserver against real livekit-agents sessions (offline) and a real server.

Every assertion reads the stored events back over the HTTP API.
"""

from __future__ import annotations

from typing import Any

import pytest
from livekit.agents import mock_tools

from agentledger.client import Ledger

from .conftest import RunSession, Stored, WeatherAgent
from .fakes import Reply

pytestmark = pytest.mark.livekit

StoredReader = Any


def _turn_shape(s: Stored, user: dict[str, Any]) -> list[str]:
    """Event types of the subtree under a user message, depth-first in logging order."""
    out: list[str] = []

    def walk(event: dict[str, Any], depth: int) -> None:
        for kid in s.kids(event):
            out.append("  " * depth + kid["event"])
            walk(kid, depth + 1)

    walk(user, 0)
    return out


async def test_turn_with_one_tool_call(
    run_session: RunSession, stored: StoredReader, ledger: Ledger
) -> None:
    ran = await run_session(
        [
            Reply("req-1", calls=[("get_weather", {"city": "Paris"}, "call-1")], usage=(20, 5, 8)),
            Reply("req-2", text="It is sunny in Paris.", usage=(30, 7, 0)),
        ],
        ["What's the weather in Paris?"],
    )
    # LiveKit's own result is unchanged by the observer.
    result = ran.results[0]
    result.expect.next_event().is_function_call(name="get_weather", arguments={"city": "Paris"})
    result.expect.next_event().is_function_call_output(output="sunny in Paris")
    result.expect.next_event().is_message(role="assistant")
    result.expect.no_more_events()

    s = stored()
    start = s.one("session_start")
    assert start["parent_id"] is None
    assert start["data"]["framework"] == "livekit-agents"
    assert start["session_id"] == ran.observer.session_id
    assert {e["session_id"] for e in s.events} == {ran.observer.session_id}

    user = s.one("user_message")
    assert user["data"]["text"] == "What's the weather in Paris?"
    assert user["data"]["role"] == "user"
    assert user["data"]["item_id"].startswith("item_")
    assert s.parent(user) is start

    first, second = s.of("llm_start")
    assert s.parent(first) is user
    assert first["data"]["model"] == "fake-model"
    assert first["data"]["provider"] == "fake-provider"
    assert first["data"]["messages"][-1] == {"role": "user", "text": "What's the weather in Paris?"}

    call = s.one("tool_call")
    assert call["data"] == {
        "tool": "get_weather",
        "args": {"city": "Paris"},
        "call_id": "call-1",
        "speech_id": call["data"]["speech_id"],
    }
    assert call["data"]["speech_id"].startswith("speech_")

    tool_result = s.one("tool_result")
    assert s.parent(tool_result) is call
    assert tool_result["data"]["result"] == "sunny in Paris"
    assert tool_result["data"]["status"] == "done"
    assert tool_result["data"]["duration_ms"] >= 0

    end_1 = s.one("llm_end", request_id="req-1")
    assert s.parent(end_1) is first
    # The tool call descends from the model output that asked for it.
    assert s.parent(call) is end_1
    assert end_1["data"]["token_usage"] == {
        "input_tokens": 20,
        "output_tokens": 5,
        "cache_read_tokens": 8,
        "cache_write_tokens": 0,
        "reasoning_tokens": 0,
        "model": "fake-model",
    }
    assert end_1["data"]["tool_calls"] == [
        {"tool": "get_weather", "args": {"city": "Paris"}, "call_id": "call-1"}
    ]
    assert end_1["data"]["finish_reason"] == "tool_calls"
    assert end_1["data"]["ttft_ms"] > 0
    assert end_1["data"]["duration_ms"] >= end_1["data"]["ttft_ms"]

    # The second request was caused by the tool result; the reply descends from its llm_end.
    assert s.parent(second) is tool_result
    end_2 = s.one("llm_end", request_id="req-2")
    assert s.parent(end_2) is second
    assert end_2["data"]["text"] == "It is sunny in Paris."
    assert end_2["data"]["token_usage"]["input_tokens"] == 30
    assert end_2["data"]["finish_reason"] == "stop"
    reply = s.one("assistant_response")
    assert s.parent(reply) is end_2
    assert reply["data"]["text"] == "It is sunny in Paris."
    assert reply["data"]["interrupted"] is False
    assert reply["data"]["latency"]["llm_ttft_ms"] > 0
    assert s.ancestors(reply) == [
        "session_start",
        "user_message",
        "llm_start",
        "llm_end",
        "tool_call",
        "tool_result",
        "llm_start",
        "llm_end",
    ]

    # The server's why() walks the same chain.
    why = ledger.why(reply["event_id"], depth=50)
    assert [e.event for e in why.chain] == [*s.ancestors(reply), "assistant_response"]
    assert why.chain_complete

    end = s.one("session_end")
    assert s.parent(end) is start
    assert end["data"]["reason"] == "user_initiated"
    (usage,) = end["data"]["usage"]
    assert usage["model"] == "fake-model"
    assert usage["input_tokens"] == 50
    assert usage["output_tokens"] == 12
    assert usage["cache_read_tokens"] == 8
    agent_step = s.one("step_start", name="weather_agent")
    assert agent_step["data"]["kind"] == "agent"
    assert s.parent(agent_step) is start
    assert s.parent(s.one("step_end")) is agent_step


async def test_two_parallel_tool_calls(run_session: RunSession, stored: StoredReader) -> None:
    await run_session(
        [
            Reply(
                "req-1",
                calls=[
                    ("get_weather", {"city": "Oslo"}, "call-w"),
                    ("get_time", {"city": "Oslo"}, "call-t"),
                ],
            ),
            Reply("req-2", text="Sunny and noon in Oslo."),
        ],
        ["Weather and time in Oslo?"],
    )
    s = stored()
    first_end = s.one("llm_end", request_id="req-1")
    calls = s.of("tool_call")
    assert {c["data"]["tool"]: c["data"]["args"] for c in calls} == {
        "get_weather": {"city": "Oslo"},
        "get_time": {"city": "Oslo"},
    }
    assert all(s.parent(c) is first_end for c in calls)
    results = {r["data"]["call_id"]: r for r in s.of("tool_result")}
    assert set(results) == {"call-w", "call-t"}
    for call in calls:
        result = results[call["data"]["call_id"]]
        assert s.parent(result) is call
        assert result["data"]["tool"] == call["data"]["tool"]
    assert results["call-w"]["data"]["result"] == "sunny in Oslo"
    assert results["call-t"]["data"]["result"] == "noon in Oslo"
    end_1 = s.one("llm_end", request_id="req-1")
    assert sorted(c["call_id"] for c in end_1["data"]["tool_calls"]) == ["call-t", "call-w"]
    # The follow-up request descends from the last of the two outcomes.
    second = s.of("llm_start")[1]
    assert s.parent(second)["event"] == "tool_result"
    assert s.parent(s.one("assistant_response"))["data"]["request_id"] == "req-2"


async def test_tool_that_raises(run_session: RunSession, stored: StoredReader) -> None:
    ran = await run_session(
        [
            Reply("req-1", calls=[("book_flight", {"city": "Rome", "seats": 2}, "call-b")]),
            Reply("req-2", text="Sorry, booking is down."),
        ],
        ["Book two seats to Rome."],
    )
    ran.results[0].expect.next_event().is_function_call(name="book_flight")
    ran.results[0].expect.next_event().is_function_call_output(is_error=True)

    s = stored()
    call = s.one("tool_call", tool="book_flight")
    assert call["data"]["args"] == {"city": "Rome", "seats": 2}
    error = s.one("tool_error")
    assert s.parent(error) is call
    assert error["data"]["tool"] == "book_flight"
    assert error["data"]["call_id"] == "call-b"
    assert error["data"]["status"] == "error"
    # LiveKit tells the model "An internal error occurred"; the ledger keeps the real text.
    assert error["data"]["error"] == "booking backend down, cannot book 2 seat(s) to Rome"
    assert error["data"]["model_output"] == "An internal error occurred"
    assert error["data"]["type"] is None  # LiveKit reports the text, not the exception class
    assert s.of("tool_result") == []
    # The session went on: the error caused the next request, which produced the reply.
    second = s.of("llm_start")[1]
    assert s.parent(second) is error
    assert s.one("assistant_response")["data"]["text"] == "Sorry, booking is down."


async def test_two_turns_in_one_session(run_session: RunSession, stored: StoredReader) -> None:
    ran = await run_session(
        [
            Reply("req-1", calls=[("get_weather", {"city": "Lima"}, "call-1")], usage=(10, 2, 0)),
            Reply("req-2", text="Sunny in Lima.", usage=(15, 4, 0)),
            Reply("req-3", text="You're welcome.", usage=(25, 3, 10)),
        ],
        ["Weather in Lima?", "Thanks!"],
    )
    s = stored()
    start = s.one("session_start")
    first_user, second_user = s.of("user_message")
    assert [u["data"]["text"] for u in (first_user, second_user)] == ["Weather in Lima?", "Thanks!"]
    replies = s.of("assistant_response")
    assert [r["data"]["text"] for r in replies] == ["Sunny in Lima.", "You're welcome."]
    # The conversation goes on from the reply the user heard.
    assert s.parent(first_user) is start and s.parent(second_user) is replies[0]
    assert "user_message" in s.ancestors(replies[0])
    assert s.ancestors(replies[1])[-4:] == [
        "assistant_response",
        "user_message",
        "llm_start",
        "llm_end",
    ]
    # Each turn's steps descend from its user message; the next turn from the reply.
    assert _turn_shape(s, first_user) == [
        "llm_start",
        "  llm_end",
        "    tool_call",
        "      tool_result",
        "        llm_start",
        "          llm_end",
        "            assistant_response",
        "              user_message",
        "                llm_start",
        "                  llm_end",
        "                    assistant_response",
    ]
    assert _turn_shape(s, second_user) == ["llm_start", "  llm_end", "    assistant_response"]

    end_3 = s.one("llm_end", request_id="req-3")
    assert end_3["data"]["token_usage"]["input_tokens"] == 25
    assert end_3["data"]["token_usage"]["cache_read_tokens"] == 10
    per_request = sum(e["data"]["token_usage"]["input_tokens"] for e in s.of("llm_end"))
    (usage,) = s.one("session_end")["data"]["usage"]
    assert usage["input_tokens"] == per_request == 50
    assert usage["output_tokens"] == 9
    # The model really saw the first turn when answering the second.
    assert len(ran.model.script.requests) == 3


async def test_mock_tools_replaces_a_tool(run_session: RunSession, stored: StoredReader) -> None:
    calls: list[tuple[Any, str]] = []

    def rainy(context: Any, city: str) -> str:
        calls.append((context, city))
        return f"rainy in {city}"

    with mock_tools(WeatherAgent, {"get_weather": rainy}):
        ran = await run_session(
            [
                Reply("req-1", calls=[("get_weather", {"city": "Bergen"}, "call-m")]),
                Reply("req-2", text="Rainy in Bergen."),
            ],
            ["Weather in Bergen?"],
        )
    assert [city for _, city in calls] == ["Bergen"]
    ran.results[0].expect.next_event().is_function_call(name="get_weather")
    ran.results[0].expect.next_event().is_function_call_output(output="rainy in Bergen")

    s = stored()
    call = s.one("tool_call", tool="get_weather")
    assert call["data"]["args"] == {"city": "Bergen"}
    result = s.one("tool_result")
    assert s.parent(result) is call
    assert result["data"]["result"] == "rainy in Bergen"


async def test_tool_arguments_that_do_not_fit(
    run_session: RunSession, stored: StoredReader
) -> None:
    """LiveKit never starts a call whose arguments do not fit the tool's signature; it still
    gets a tool_call and a tool_error, from ``function_tools_executed``."""
    await run_session(
        [
            Reply("req-1", calls=[("get_weather", '{"town": "Paris"}', "call-bad")]),
            Reply("req-2", text="Which city?"),
        ],
        ["Weather?"],
    )
    s = stored()
    call = s.one("tool_call")
    assert call["data"]["tool"] == "get_weather"
    assert call["data"]["args"] == {"town": "Paris"}
    assert s.parent(call)["event"] == "llm_end"
    error = s.one("tool_error")
    assert s.parent(error) is call
    assert "Error parsing arguments" in error["data"]["error"]
    assert s.one("assistant_response")["data"]["text"] == "Which city?"
