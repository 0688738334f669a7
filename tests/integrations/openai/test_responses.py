"""The Responses API: input and instructions, a function-call round trip, an answer cut at
``max_output_tokens`` (finish_reason ``length``), sync and async."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import openai
import pytest

from _events import Stored
from agentledger.client import Ledger

from .fake_api import RESPONSES, FakeOpenAI, function_item, message_item, response

pytestmark = pytest.mark.openai

Read = Callable[[], Stored]

LOOKUP = {
    "type": "function",
    "name": "lookup_order",
    "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
}


def test_a_plain_response(client: openai.OpenAI, api: FakeOpenAI, stored: Read) -> None:
    api.reply(RESPONSES, response([message_item("Bonjour.")]))
    result = client.responses.create(
        model="gpt-test",
        instructions="Answer in French.",
        input="Say hello",
        max_output_tokens=64,
        temperature=0.0,
    )
    assert result.output_text == "Bonjour."
    events = stored()
    assert events.one("user_message")["data"]["text"] == "Say hello"
    start = events.one("llm_start")
    assert start["data"]["messages"] == [
        {"role": "system", "content": "Answer in French."},
        {"role": "user", "content": "Say hello"},
    ]
    assert start["data"]["system_prompt"] == "Answer in French."
    assert start["data"]["api"] == "responses"
    assert start["data"]["invocation_params"] == {
        "model": "gpt-test",
        "max_output_tokens": 64,
        "temperature": 0.0,
    }
    end = events.one("llm_end")
    assert end["data"]["text"] == "Bonjour."
    assert end["data"]["finish_reason"] == "stop"
    assert end["data"]["token_usage"] == {
        "input_tokens": 20,
        "output_tokens": 7,
        "cache_read_tokens": 8,
        "cache_write_tokens": None,
        "reasoning_tokens": 3,
        "model": "gpt-test-2025",
    }
    assert events.one("assistant_response")["data"]["text"] == "Bonjour."


def test_incomplete_at_max_output_tokens_is_length(
    client: openai.OpenAI, api: FakeOpenAI, stored: Read
) -> None:
    api.reply(
        RESPONSES,
        response([message_item("Part")], status="incomplete", incomplete="max_output_tokens"),
    )
    client.responses.create(model="gpt-test", input="Write an essay", max_output_tokens=1)
    events = stored()
    assert events.one("llm_end")["data"]["finish_reason"] == "length"
    assert events.one("assistant_response")["data"]["text"] == "Part"


def _queue_round_trip(api: FakeOpenAI) -> None:
    api.reply(RESPONSES, response([function_item("call_r", "lookup_order", '{"order_id":"A1"}')]))
    api.reply(RESPONSES, response([message_item("Order A1 has shipped.")]))


def _check(ledger: Ledger, events: Stored) -> None:
    first_end = events.of("llm_end")[0]
    assert first_end["data"]["finish_reason"] == "tool_calls"
    call = events.one("tool_call")
    assert call["data"] == {"tool": "lookup_order", "args": {"order_id": "A1"}, "call_id": "call_r"}
    assert events.parent(call) == first_end
    result = events.one("tool_result")
    assert result["data"] == {
        "tool": "lookup_order",
        "call_id": "call_r",
        "result": {"status": "shipped"},
    }
    assert events.parent(result) == call
    assert events.types()["user_message"] == 1
    answer = events.one("assistant_response")
    chain = {e.event for e in ledger.why(answer["event_id"]).chain}
    assert {"user_message", "tool_call", "tool_result"} <= chain


def test_a_function_call_round_trip(
    client: openai.OpenAI, api: FakeOpenAI, ledger: Ledger, stored: Read
) -> None:
    _queue_round_trip(api)
    history: list[Any] = [{"role": "user", "content": "Where is order A1?"}]
    first = client.responses.create(model="gpt-test", input=history, tools=[LOOKUP])
    history += first.output  # the SDK's output items, as the docs show
    output = '{"status": "shipped"}'
    history.append({"type": "function_call_output", "call_id": "call_r", "output": output})
    second = client.responses.create(model="gpt-test", input=history, tools=[LOOKUP])
    assert second.output_text == "Order A1 has shipped."
    events = stored()
    start = events.of("llm_start")[0]
    assert start["data"]["tools"] == ["lookup_order"]
    assert start["data"]["tool_schemas"] == [LOOKUP]
    _check(ledger, events)


async def test_a_function_call_round_trip_async_with_previous_response_id(
    aclient: openai.AsyncOpenAI, api: FakeOpenAI, ledger: Ledger, stored: Read
) -> None:
    _queue_round_trip(api)
    first = await aclient.responses.create(
        model="gpt-test", input="Where is order A1?", tools=[LOOKUP]
    )
    output = '{"status": "shipped"}'
    await aclient.responses.create(
        model="gpt-test",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": "call_r", "output": output}],
        tools=[LOOKUP],
    )
    events = stored()
    second_start = events.of("llm_start")[1]
    assert second_start["data"]["invocation_params"]["previous_response_id"] == "resp_1"
    assert events.parent(second_start) == events.one("tool_result")
    _check(ledger, events)
