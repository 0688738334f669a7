"""Streamed calls: the caller gets the SDK's chunks unchanged; ``llm_end`` is logged when the
stream ends or is closed early, with ``ttft_ms`` and ``streamed_chunks``."""

from __future__ import annotations

import gc
import json
from collections.abc import Callable
from typing import Any

import openai
import pytest

from _events import Stored

from .fake_api import (
    CHAT,
    RESPONSES,
    FakeOpenAI,
    chat_usage,
    chunk,
    message_item,
    response,
    response_events,
    text_chunks,
    tool_chunks,
)

pytestmark = pytest.mark.openai

Read = Callable[[], Stored]
USER: Any = [{"role": "user", "content": "Tell me a story."}]


def test_a_stream_consumed_fully(client: openai.OpenAI, api: FakeOpenAI, stored: Read) -> None:
    api.stream(CHAT, text_chunks("Once ", "upon ", "a time."))
    stream = client.chat.completions.create(model="gpt-test", messages=USER, stream=True)
    chunks = list(stream)
    assert all(isinstance(c, openai.types.chat.ChatCompletionChunk) for c in chunks)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Once upon a time."
    assert api.bodies(CHAT)[0] == {"model": "gpt-test", "messages": USER, "stream": True}
    events = stored()
    end = events.one("llm_end")
    assert end["data"]["text"] == "Once upon a time."
    assert end["data"]["finish_reason"] == "stop"
    assert end["data"]["token_usage"] is None  # not asked for: unknown, not 0
    assert end["data"]["streamed_chunks"] == len(chunks) == 5
    assert 0 <= end["data"]["ttft_ms"] <= end["data"]["duration_ms"]
    assert "closed_early" not in end["data"]
    answer = events.one("assistant_response")
    assert answer["data"] == {"text": "Once upon a time."}
    assert events.parent(answer) == end


def test_a_stream_with_usage(client: openai.OpenAI, api: FakeOpenAI, stored: Read) -> None:
    api.stream(CHAT, text_chunks("Hi.", usage=chat_usage(9, 2, 0)))
    with client.chat.completions.create(
        model="gpt-test", messages=USER, stream=True, stream_options={"include_usage": True}
    ) as stream:
        for _ in stream:
            pass
    end = stored().one("llm_end")
    assert end["data"]["token_usage"]["input_tokens"] == 9
    assert end["data"]["token_usage"]["output_tokens"] == 2
    assert end["data"]["token_usage"]["model"] == "gpt-test-2025"
    assert api.bodies(CHAT)[0]["stream_options"] == {"include_usage": True}


def test_a_stream_closed_early(client: openai.OpenAI, api: FakeOpenAI, stored: Read) -> None:
    api.stream(CHAT, text_chunks(*[f"word{n} " for n in range(200)]))
    stream = client.chat.completions.create(model="gpt-test", messages=USER, stream=True)
    seen = [next(stream) for _ in range(3)]
    stream.close()
    stream.close()  # twice: still one llm_end
    assert seen[1].choices[0].delta.content == "word0 "
    events = stored()
    end = events.one("llm_end")
    assert end["data"]["closed_early"] is True
    assert end["data"]["streamed_chunks"] == 3
    assert end["data"]["text"] == "word0 word1 "
    assert end["data"]["finish_reason"] is None
    answer = events.one("assistant_response")
    assert answer["data"] == {"text": "word0 word1 ", "interrupted": True}


def test_leaving_the_with_block_early(client: openai.OpenAI, api: FakeOpenAI, stored: Read) -> None:
    api.stream(CHAT, text_chunks(*[f"w{n} " for n in range(200)]))
    with client.chat.completions.create(model="gpt-test", messages=USER, stream=True) as stream:
        for piece in stream:
            if piece.choices[0].delta.content:
                break
        assert stream.response.status_code == 200  # other attributes pass through
    end = stored().one("llm_end")
    assert end["data"]["closed_early"] is True and end["data"]["text"] == "w0 "


def test_a_stream_dropped_midway(client: openai.OpenAI, api: FakeOpenAI, stored: Read) -> None:
    """``for chunk in stream: break`` and the stream goes away: what arrived is logged."""
    api.stream(CHAT, text_chunks(*[f"v{n} " for n in range(200)]))
    stream = client.chat.completions.create(model="gpt-test", messages=USER, stream=True)
    for piece in stream:
        if piece.choices[0].delta.content:
            break
    stream.response.close()
    del stream, piece
    gc.collect()
    end = stored().one("llm_end")
    assert end["data"]["closed_early"] is True and end["data"]["text"] == "v0 "


def test_a_streamed_tool_call(client: openai.OpenAI, api: FakeOpenAI, stored: Read) -> None:
    api.stream(CHAT, tool_chunks("call_s", "lookup", '{"order', '_id": ', '"A1"}'))
    for _ in client.chat.completions.create(model="gpt-test", messages=USER, stream=True):
        pass
    events = stored()
    end = events.one("llm_end")
    assert end["data"]["tool_calls"] == [
        {"id": "call_s", "name": "lookup", "args": {"order_id": "A1"}}
    ]
    assert end["data"]["finish_reason"] == "tool_calls"
    call = events.one("tool_call")
    assert call["data"] == {"tool": "lookup", "args": {"order_id": "A1"}, "call_id": "call_s"}
    assert events.parent(call) == end
    assert not events.of("assistant_response")


def test_a_stream_that_fails_midway(client: openai.OpenAI, api: FakeOpenAI, stored: Read) -> None:
    error = {"error": {"message": "overloaded", "type": "server_error"}}
    api.stream(CHAT, [chunk({"role": "assistant", "content": "Par"}), error])
    stream = client.chat.completions.create(model="gpt-test", messages=USER, stream=True)
    with pytest.raises(openai.APIError, match="overloaded"):
        for _ in stream:
            pass
    events = stored()
    failure = events.one("llm_error")
    assert failure["data"]["type"] == "APIError"
    assert events.parent(failure) == events.one("llm_start")
    assert not events.of("llm_end")


async def test_an_async_stream(aclient: openai.AsyncOpenAI, api: FakeOpenAI, stored: Read) -> None:
    api.stream(CHAT, text_chunks("a", "b", "c"))
    api.stream(CHAT, text_chunks(*[f"x{n}" for n in range(200)]))
    stream = await aclient.chat.completions.create(model="gpt-test", messages=USER, stream=True)
    texts = [c.choices[0].delta.content async for c in stream]
    assert "".join(t or "" for t in texts) == "abc"
    async with await aclient.chat.completions.create(
        model="gpt-test", messages=USER, stream=True
    ) as early:
        async for piece in early:
            if piece.choices[0].delta.content:
                break
    events = stored()
    full, cut = events.of("llm_end")
    assert full["data"]["text"] == "abc" and "closed_early" not in full["data"]
    assert cut["data"]["text"] == "x0" and cut["data"]["closed_early"] is True
    assert len(events.of("assistant_response")) == 2


def test_a_streamed_response(client: openai.OpenAI, api: FakeOpenAI, stored: Read) -> None:
    final = response([message_item("Hello world")])
    api.stream(RESPONSES, response_events(["Hello", " world"], final), done=False)
    stream = client.responses.create(model="gpt-test", input="Say hello", stream=True)
    kinds = [event.type for event in stream]
    assert kinds.count("response.output_text.delta") == 2
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    events = stored()
    end = events.one("llm_end")
    assert end["data"]["text"] == "Hello world"
    assert end["data"]["finish_reason"] == "stop"
    assert end["data"]["streamed_chunks"] == len(kinds) == 9
    assert end["data"]["token_usage"]["input_tokens"] == 20
    assert events.one("assistant_response")["data"]["text"] == "Hello world"


async def test_an_async_streamed_response_closed_early(
    aclient: openai.AsyncOpenAI, api: FakeOpenAI, stored: Read
) -> None:
    parts = [f"p{n} " for n in range(200)]
    final = response([message_item("".join(parts))])
    api.stream(RESPONSES, response_events(parts, final), done=False)
    stream = await aclient.responses.create(model="gpt-test", input="Go", stream=True)
    got = [await stream.__anext__() for _ in range(5)]
    await stream.close()
    assert [g.type for g in got][-1] == "response.output_text.delta"
    end = stored().one("llm_end")
    assert end["data"]["text"] == "p0 p1 " and end["data"]["closed_early"] is True
    assert end["data"]["response_model"] == "gpt-test-2025"
    assert json.loads(json.dumps(end["data"]))  # plain JSON


def test_the_stream_helpers_still_work(
    client: openai.OpenAI, api: FakeOpenAI, stored: Read
) -> None:
    """``chat.completions.stream()`` and ``responses.stream()`` call ``create(stream=True)``:
    they keep working on the recording stand-in, and are recorded."""
    api.stream(CHAT, text_chunks("He", "llo"))
    final = response([message_item("Hi all")])
    api.stream(RESPONSES, response_events(["Hi", " all"], final), done=False)
    with client.chat.completions.stream(model="gpt-test", messages=USER) as chat:
        deltas = [e.delta for e in chat if e.type == "content.delta" and e.delta]
        assert chat.get_final_completion().choices[0].message.content == "Hello"
    assert deltas == ["He", "llo"]
    with client.responses.stream(model="gpt-test", input="hi") as events:
        assert [e.type for e in events][-1] == "response.completed"
        assert events.get_final_response().output_text == "Hi all"
    texts = [e["data"]["text"] for e in stored().of("llm_end")]
    assert texts == ["Hello", "Hi all"]


async def test_the_async_stream_helpers_still_work(
    aclient: openai.AsyncOpenAI, api: FakeOpenAI, stored: Read
) -> None:
    api.stream(CHAT, text_chunks("He", "llo"))
    final = response([message_item("Hi all")])
    api.stream(RESPONSES, response_events(["Hi", " all"], final), done=False)
    async with aclient.chat.completions.stream(model="gpt-test", messages=USER) as chat:
        deltas = [e.delta async for e in chat if e.type == "content.delta" and e.delta]
        completion = await chat.get_final_completion()
    assert deltas == ["He", "llo"] and completion.choices[0].message.content == "Hello"
    async with aclient.responses.stream(model="gpt-test", input="hi") as events:
        async for _ in events:
            pass
        assert (await events.get_final_response()).output_text == "Hi all"
    texts = [e["data"]["text"] for e in stored().of("llm_end")]
    assert texts == ["Hello", "Hi all"]
