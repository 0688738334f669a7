"""``instrument_openai()``: what it accepts, its options, raw responses, the missing extra, and
the guard: a broken ledger never changes what the SDK returns or raises."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import openai
import pytest

from _events import Stored
from agentledger.client import Ledger
from agentledger.integrations.openai import instrument, instrument_openai
from agentledger.protocol import LedgerError

from .fake_api import (
    CHAT,
    RESPONSES,
    FakeOpenAI,
    completion,
    message_item,
    response,
    text_chunks,
    tool_call,
)

pytestmark = pytest.mark.openai

Read = Callable[[], Stored]
USER: Any = [{"role": "user", "content": "hi"}]


class BrokenLedger:
    """A ledger adapter whose ``log`` always raises."""

    def __init__(self) -> None:
        self.calls = 0

    def log(
        self,
        event: str,
        data: dict[str, Any],
        *,
        session_id: str | None = None,
        parent_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Any:
        self.calls += 1
        raise RuntimeError("ledger is down")


def test_it_returns_the_same_client_and_refuses_twice(
    plain_client: openai.OpenAI, ledger: Ledger
) -> None:
    assert instrument_openai(plain_client, ledger) is plain_client
    with pytest.raises(RuntimeError) as raised:
        instrument_openai(plain_client, ledger)
    assert isinstance(raised.value, LedgerError)


def test_it_refuses_what_is_no_client(ledger: Ledger) -> None:
    with pytest.raises(TypeError) as raised:
        instrument_openai(object(), ledger)  # type: ignore[type-var]
    assert isinstance(raised.value, LedgerError)


def test_max_scopes_below_one_is_refused(plain_client: openai.OpenAI, ledger: Ledger) -> None:
    with pytest.raises(ValueError):
        instrument_openai(plain_client, ledger, max_scopes=0)


def test_instrument_has_the_shape_of_every_integration() -> None:
    """README, "Integrations": (target, ledger) plus session_id=, metadata=, max_scopes=."""
    from ..shape import assert_one_shape

    assert_one_shape("agentledger.integrations.openai")


def test_import_without_the_sdk_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['openai'] = None\n"
        "from agentledger.protocol import LedgerError\n"
        "try:\n"
        "    import agentledger.integrations.openai\n"
        "except ImportError as error:\n"
        "    assert isinstance(error, LedgerError), type(error)\n"
        "    print(error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert "pip install 'agentledger[openai]'" in done.stdout


def test_raw_responses_pass_through_unrecorded(
    plain_client: openai.OpenAI, api: FakeOpenAI, ledger: Ledger, stored: Read
) -> None:
    before = plain_client.chat.completions.with_raw_response  # made before instrumenting
    client = instrument(plain_client, ledger)
    api.reply(CHAT, completion("one"))
    api.reply(CHAT, completion("two"))
    api.reply(RESPONSES, response([message_item("three")]))
    raw = before.create(model="gpt-test", messages=USER)
    assert raw.parse().choices[0].message.content == "one"
    raw = client.chat.completions.with_raw_response.create(model="gpt-test", messages=USER)
    assert raw.http_response.status_code == 200
    assert raw.parse().choices[0].message.content == "two"
    with client.responses.with_streaming_response.create(model="gpt-test", input="x") as raw:
        assert raw.parse().output_text == "three"
    assert stored().events == []


def test_options_session_function_metadata_and_agent(
    plain_client: openai.OpenAI,
    api: FakeOpenAI,
    ledger: Ledger,
    ledger_server: Any,
    agent_name: str,
) -> None:
    from _events import read_events

    current = {"session": "user-1"}
    client = instrument_openai(
        plain_client,
        ledger,
        agent=f"{agent_name}-bot",
        session_id=lambda: current["session"],
        metadata={"config": "v2"},
    )
    api.reply(CHAT, completion("a"))
    api.reply(CHAT, completion("b"))
    client.chat.completions.create(model="gpt-test", messages=USER)
    current["session"] = "user-2"
    client.chat.completions.create(model="gpt-test", messages=USER)
    ledger.flush(timeout_s=20.0)
    events = read_events(ledger_server.url, ledger_server.headers(), f"{agent_name}-bot")
    assert [e["session_id"] for e in events].count("user-1") == 4
    assert [e["session_id"] for e in events].count("user-2") == 4
    assert all(e["metadata"] == {"config": "v2"} for e in events)
    # each session has its own conversation: the same text is a new turn in each
    assert sum(e["event"] == "user_message" for e in events) == 2


def test_the_default_session_is_one_per_client(
    plain_client: openai.OpenAI, api: FakeOpenAI, ledger: Ledger, stored: Read
) -> None:
    client = instrument_openai(plain_client, ledger)
    api.reply(CHAT, completion("a"))
    api.reply(CHAT, completion("b"))
    client.chat.completions.create(model="gpt-test", messages=USER)
    client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "2"}])
    sessions = {e["session_id"] for e in stored().events}
    assert len(sessions) == 1 and None not in sessions


def test_conversations_beyond_max_scopes_are_forgotten(
    plain_client: openai.OpenAI, api: FakeOpenAI, ledger: Ledger, stored: Read
) -> None:
    current = {"session": "s-0"}
    client = instrument_openai(
        plain_client, ledger, session_id=lambda: current["session"], max_scopes=1
    )
    api.reply(CHAT, completion(tool_calls=[tool_call("c1", "lookup", "{}")]))
    api.reply(CHAT, completion("other"))
    api.reply(CHAT, completion("done"))
    first = client.chat.completions.create(model="gpt-test", messages=USER)
    current["session"] = "s-1"  # pushes s-0 out
    client.chat.completions.create(model="gpt-test", messages=USER)
    current["session"] = "s-0"
    history: Any = [
        *USER,
        first.choices[0].message,
        {"role": "tool", "tool_call_id": "c1", "content": "found"},
    ]
    client.chat.completions.create(model="gpt-test", messages=history)
    events = stored()
    result = events.one("tool_result")
    assert result["parent_id"] is None  # its call was forgotten: a root, never a guess
    assert result["data"]["tool"] == "lookup"  # named from the history it came with


@pytest.mark.allow_internal_errors
def test_a_broken_ledger_never_breaks_the_sdk(
    plain_client: openai.OpenAI, api: FakeOpenAI, caplog: pytest.LogCaptureFixture
) -> None:
    broken = BrokenLedger()
    client = instrument_openai(plain_client, broken)
    api.reply(CHAT, completion("fine"))
    api.stream(CHAT, text_chunks("s", "t"))
    api.reply(RESPONSES, response([message_item("ok")]))
    api.fail(CHAT, 400, "bad request")
    with caplog.at_level(logging.ERROR, logger="agentledger"):
        result = client.chat.completions.create(model="gpt-test", messages=USER)
        assert result.choices[0].message.content == "fine"
        chunks = list(client.chat.completions.create(model="gpt-test", messages=USER, stream=True))
        assert "".join(c.choices[0].delta.content or "" for c in chunks) == "st"
        assert client.responses.create(model="gpt-test", input="x").output_text == "ok"
        with pytest.raises(openai.BadRequestError, match="bad request"):
            client.chat.completions.create(model="gpt-test", messages=USER)
    assert broken.calls >= 4
    swallowed = [r for r in caplog.records if r.name == "agentledger" and r.exc_info]
    assert swallowed and all("ledger is down" in str(r.exc_info[1]) for r in swallowed)


@pytest.mark.allow_internal_errors
async def test_a_broken_ledger_never_breaks_the_async_sdk(api: FakeOpenAI) -> None:
    client = instrument_openai(
        openai.AsyncOpenAI(base_url=api.url, api_key="sk-test-not-a-key", max_retries=0),
        BrokenLedger(),
    )
    api.reply(CHAT, completion("fine"))
    api.stream(CHAT, text_chunks("s", "t"))
    api.fail(CHAT, 400, "bad request")
    result = await client.chat.completions.create(model="gpt-test", messages=USER)
    assert result.choices[0].message.content == "fine"
    stream = await client.chat.completions.create(model="gpt-test", messages=USER, stream=True)
    assert [c.choices[0].delta.content async for c in stream][1] == "s"
    with pytest.raises(openai.BadRequestError):
        await client.chat.completions.create(model="gpt-test", messages=USER)
    await client.close()
