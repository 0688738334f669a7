"""Chat Completions, sync and async: the events of a plain answer, a tool-call round trip,
an answer cut at the token limit, and an SDK error."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
import pytest

from _events import Stored
from agentledger.client import Ledger

from .fake_api import CHAT, FakeOpenAI, chat_usage, completion, tool_call

pytestmark = pytest.mark.openai

Read = Callable[[], Stored]

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def test_a_plain_answer(client: openai.OpenAI, api: FakeOpenAI, stored: Read) -> None:
    api.reply(CHAT, completion("Hello there."))
    messages: Any = [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hi " * 3000},
    ]
    result = client.chat.completions.create(
        model="gpt-test", messages=messages, temperature=0.2, seed=7, max_tokens=50
    )
    assert result.choices[0].message.content == "Hello there."
    assert api.bodies(CHAT)[0] == {
        "model": "gpt-test",
        "messages": messages,
        "temperature": 0.2,
        "seed": 7,
        "max_tokens": 50,
    }
    events = stored()
    assert [e["event"] for e in events.events] == [
        "user_message",
        "llm_start",
        "llm_end",
        "assistant_response",
    ]
    assert {e["session_id"] for e in events.events} == {"chat-1"}
    user = events.one("user_message")
    assert user["data"]["text"] == "hi " * 3000  # whole, not trimmed
    start = events.one("llm_start")
    data = start["data"]
    assert data["model"] == "gpt-test" and data["provider"] == "openai"
    assert data["messages"] == messages
    assert data["system_prompt"] == "You are terse."
    assert data["prompt_hash"].startswith("sha256:")
    assert data["invocation_params"] == {
        "model": "gpt-test",
        "temperature": 0.2,
        "seed": 7,
        "max_tokens": 50,
    }
    assert start["parent_id"] == user["event_id"]
    assert {"event_id": user["event_id"], "kind": "read"} in start["caused_by"]
    end = events.one("llm_end")
    assert events.parent(end) == start
    assert end["data"]["text"] == "Hello there."
    assert end["data"]["finish_reason"] == "stop"
    assert end["data"]["response_model"] == "gpt-test-2025"
    assert end["data"]["token_usage"] == {
        "input_tokens": 12,
        "output_tokens": 5,
        "cache_read_tokens": 4,
        "cache_write_tokens": None,
        "reasoning_tokens": 2,
        "model": "gpt-test-2025",
    }
    assert end["data"]["duration_ms"] >= 0
    answer = events.one("assistant_response")
    assert answer["data"]["text"] == "Hello there."
    assert events.parent(answer) == end
    assert {"event_id": end["event_id"], "kind": "produced"} in answer["caused_by"]


def _tool_round_trip(api: FakeOpenAI) -> list[Any]:
    api.reply(
        CHAT,
        completion(
            tool_calls=[
                tool_call("call_a", "get_weather", '{"city": "Paris"}'),
                tool_call("call_b", "get_weather", "not json"),
            ]
        ),
    )
    api.reply(CHAT, completion("Sunny in Paris."))
    return [{"role": "user", "content": "Weather in Paris?"}]


def _check_round_trip(ledger: Ledger, events: Stored) -> None:
    assert events.types()["user_message"] == 1  # the re-sent history is no new turn
    first_end, second_end = events.of("llm_end")
    assert first_end["data"]["finish_reason"] == "tool_calls"
    assert first_end["data"]["tool_calls"] == [
        {"id": "call_a", "name": "get_weather", "args": {"city": "Paris"}},
        {"id": "call_b", "name": "get_weather", "args": "not json"},
    ]
    call_a = events.one("tool_call", call_id="call_a")
    assert call_a["data"] == {"tool": "get_weather", "args": {"city": "Paris"}, "call_id": "call_a"}
    assert events.parent(call_a) == first_end
    assert {"event_id": first_end["event_id"], "kind": "requested"} in call_a["caused_by"]
    result_a = events.one("tool_result", call_id="call_a")
    assert result_a["data"] == {"tool": "get_weather", "call_id": "call_a", "result": {"t": 21}}
    assert events.parent(result_a) == call_a
    result_b = events.one("tool_result", call_id="call_b")
    assert result_b["data"]["result"] == "cloudy"
    second_start = events.parent(second_end)
    assert second_start["data"]["tool_result_ids"] == [result_a["event_id"], result_b["event_id"]]
    read = {c["event_id"] for c in second_start["caused_by"] if c["kind"] == "read"}
    assert read == {result_a["event_id"], result_b["event_id"]}
    assert not events.of("assistant_response", text="")
    answer = events.one("assistant_response")
    assert answer["data"]["text"] == "Sunny in Paris."

    why = ledger.why(answer["event_id"])
    types = {e.event_id: e.event for e in why.chain}
    reached = set(types.values())
    assert {"user_message", "tool_call", "tool_result", "llm_start", "llm_end"} <= reached
    kinds = {(types[e.effect], types[e.cause], e.kind) for e in why.edges}
    assert ("tool_call", "llm_end", "requested") in kinds
    assert ("llm_start", "tool_result", "read") in kinds
    assert ("llm_start", "user_message", "read") in kinds
    assert ("assistant_response", "llm_end", "produced") in kinds
    assert why.chain[0].event == "user_message" and why.chain[-1].event == "assistant_response"


def test_a_tool_call_round_trip(
    client: openai.OpenAI, api: FakeOpenAI, ledger: Ledger, stored: Read
) -> None:
    messages: list[Any] = _tool_round_trip(api)
    first = client.chat.completions.create(
        model="gpt-test", messages=messages, tools=[WEATHER_TOOL], tool_choice="auto"
    )
    message = first.choices[0].message
    messages.append(message)  # the SDK's own object, as apps often do
    messages.append({"role": "tool", "tool_call_id": "call_a", "content": json.dumps({"t": 21})})
    messages.append({"role": "tool", "tool_call_id": "call_b", "content": "cloudy"})
    second = client.chat.completions.create(
        model="gpt-test", messages=messages, tools=[WEATHER_TOOL]
    )
    assert second.choices[0].message.content == "Sunny in Paris."
    events = stored()
    start = events.of("llm_start")[0]
    assert start["data"]["tools"] == ["get_weather"]
    assert start["data"]["tool_schemas"] == [WEATHER_TOOL]
    assert start["data"]["invocation_params"] == {"model": "gpt-test", "tool_choice": "auto"}
    sent = events.of("llm_start")[1]["data"]["messages"][1]
    assert sent["role"] == "assistant" and sent["tool_calls"][0]["id"] == "call_a"
    _check_round_trip(ledger, events)


async def test_a_tool_call_round_trip_async(
    aclient: openai.AsyncOpenAI, api: FakeOpenAI, ledger: Ledger, stored: Read
) -> None:
    messages: list[Any] = _tool_round_trip(api)
    first = await aclient.chat.completions.create(
        model="gpt-test", messages=messages, tools=[WEATHER_TOOL]
    )
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": "call_a", "content": json.dumps({"t": 21})})
    messages.append({"role": "tool", "tool_call_id": "call_b", "content": "cloudy"})
    await aclient.chat.completions.create(model="gpt-test", messages=messages, tools=[WEATHER_TOOL])
    events = stored()
    assert {e["session_id"] for e in events.events} == {"chat-async"}
    _check_round_trip(ledger, events)


def test_the_next_user_turn_follows_the_answer(
    client: openai.OpenAI, api: FakeOpenAI, stored: Read
) -> None:
    api.reply(CHAT, completion("Paris."))
    api.reply(CHAT, completion("About 2 million."))
    messages: list[Any] = [{"role": "user", "content": "Capital of France?"}]
    client.chat.completions.create(model="gpt-test", messages=messages)
    messages += [
        {"role": "assistant", "content": "Paris."},
        {"role": "user", "content": "Population?"},
    ]
    client.chat.completions.create(model="gpt-test", messages=messages)
    events = stored()
    _, second = events.of("user_message")
    assert second["data"]["text"] == "Population?"
    assert events.parent(second) == events.of("assistant_response")[0]
    assert events.parent(events.of("llm_start")[1]) == second


def test_a_retried_call_logs_the_turn_once(
    client: openai.OpenAI, api: FakeOpenAI, stored: Read
) -> None:
    api.fail(CHAT, 400, "try again")
    api.reply(CHAT, completion("Done."))
    messages: Any = [{"role": "user", "content": "Do it."}]
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model="gpt-test", messages=messages)
    client.chat.completions.create(model="gpt-test", messages=messages)
    events = stored()
    user = events.one("user_message")
    assert [events.parent(s) for s in events.of("llm_start")] == [user, user]


def test_finish_reason_length_is_stored_and_answered(
    client: openai.OpenAI, api: FakeOpenAI, stored: Read
) -> None:
    api.reply(CHAT, completion("The answer is a long", finish_reason="length"))
    client.chat.completions.create(
        model="gpt-test",
        messages=[{"role": "user", "content": "Explain."}],
        max_completion_tokens=5,
    )
    events = stored()
    end = events.one("llm_end")
    assert end["data"]["finish_reason"] == "length"
    assert events.one("llm_start")["data"]["invocation_params"]["max_completion_tokens"] == 5
    answer = events.one("assistant_response")
    assert answer["data"]["text"] == "The answer is a long"
    assert events.parent(answer) == end


def test_an_sdk_error_reaches_the_caller_and_is_stored(
    client: openai.OpenAI, api: FakeOpenAI, stored: Read
) -> None:
    api.fail(CHAT, 400, "model not found")
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "hi"}])
    assert raised.value.status_code == 400
    events = stored()
    error = events.one("llm_error")
    assert error["data"]["type"] == "BadRequestError"
    assert "model not found" in error["data"]["error"]
    assert error["data"]["status_code"] == 400
    assert events.parent(error) == events.one("llm_start")
    assert not events.of("llm_end") and not events.of("assistant_response")


async def test_an_async_plain_answer_and_error(
    aclient: openai.AsyncOpenAI, api: FakeOpenAI, stored: Read
) -> None:
    api.reply(CHAT, completion("Hi!", usage=chat_usage(3, 1, 0)))
    api.fail(CHAT, 422, "bad input")
    result = await aclient.chat.completions.create(
        model="gpt-test", messages=[{"role": "user", "content": "hello"}]
    )
    assert result.choices[0].message.content == "Hi!"
    with pytest.raises(openai.UnprocessableEntityError):
        await aclient.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "again"}]
        )
    events = stored()
    assert events.one("assistant_response")["data"]["text"] == "Hi!"
    assert events.one("llm_end")["data"]["token_usage"]["input_tokens"] == 3
    assert events.one("llm_error")["data"]["type"] == "UnprocessableEntityError"
    assert [e["data"]["text"] for e in events.of("user_message")] == ["hello", "again"]


def test_the_same_question_asked_again_is_a_new_turn(
    client: openai.OpenAI, api: FakeOpenAI, stored: Read
) -> None:
    """A one-shot bot sends the same single message twice: once answered, it is asked anew."""
    api.reply(CHAT, completion("42."))
    api.reply(CHAT, completion("Still 42."))
    messages: Any = [{"role": "user", "content": "The answer?"}]
    client.chat.completions.create(model="gpt-test", messages=messages)
    client.chat.completions.create(model="gpt-test", messages=messages)
    events = stored()
    first, second = events.of("user_message")
    assert events.parent(second) == events.of("assistant_response")[0]
    assert [events.parent(s) for s in events.of("llm_start")] == [first, second]


def test_a_new_question_with_tool_results_before_it(
    client: openai.OpenAI, api: FakeOpenAI, stored: Read
) -> None:
    """Tool results sent back together with a new user message: the call reads both."""
    api.reply(CHAT, completion(tool_calls=[tool_call("c9", "lookup", "{}")]))
    api.reply(CHAT, completion("Both done."))
    messages: list[Any] = [{"role": "user", "content": "Look it up."}]
    first = client.chat.completions.create(model="gpt-test", messages=messages)
    messages += [
        first.choices[0].message,
        {"role": "tool", "tool_call_id": "c9", "content": "found"},
        {"role": "user", "content": "And summarise."},
    ]
    client.chat.completions.create(model="gpt-test", messages=messages)
    events = stored()
    second_user = events.one("user_message", text="And summarise.")
    second_start = events.of("llm_start")[1]
    assert events.parent(second_start) == second_user
    read = {c["event_id"] for c in second_start["caused_by"] if c["kind"] == "read"}
    assert read == {second_user["event_id"], events.one("tool_result")["event_id"]}
