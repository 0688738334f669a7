"""Handoffs, model errors, interruptions, levels, guards and set-up of the observer."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from typing import Any

import pytest
from livekit.agents import AgentSession
from livekit.agents.testing import fake_job_context

from agentledger.client import Ledger
from agentledger.integrations.livekit import LedgerSessionObserver

from .conftest import RunSession, WeatherAgent
from .fakes import HANDOFF_REPLIES, HANDOFF_TURNS, FakeLLM, FrontDesk, Reply

pytestmark = pytest.mark.livekit

StoredReader = Any


async def test_handoff_descends_from_the_tool_that_handed_off(
    run_session: RunSession, stored: StoredReader
) -> None:
    await run_session(
        HANDOFF_REPLIES,
        HANDOFF_TURNS,
        agent=FrontDesk(),
    )
    s = stored()
    front = s.one("step_start", name="front_desk")
    billing = s.one("step_start", name="billing_agent")
    handoff_result = s.one("tool_result", tool="transfer_to_billing")
    # The model was given the text, not the (Agent, text) tuple.
    assert handoff_result["data"]["result"] == "Transferring you to billing."
    assert s.parent(billing) is handoff_result
    assert billing["data"]["inputs"]["handoff_from"] == "front_desk"
    assert billing["data"]["inputs"]["instructions"] == "You handle billing."
    front_end = s.one("step_end", name="front_desk")
    assert s.parent(front_end) is front
    assert front_end["data"]["outputs"] == {"handoff_to": "billing_agent"}
    # The new agent's greeting (no user message to answer) descends from its step.
    greeting = s.one("assistant_response", text="Billing here, how can I help?")
    assert s.ancestors(greeting)[-3:] == ["step_start", "llm_start", "llm_end"]
    assert s.parent(s.one("step_end", name="billing_agent")) is billing
    # Each model call names the agent that made it.
    agents = [e["data"]["agent"] for e in s.of("llm_start")]
    assert agents == ["front_desk", "front_desk", "billing_agent", "billing_agent"]
    # The caller's next message goes on from the new agent's greeting, not from the session.
    question = s.one("user_message", text="How much do I owe?")
    assert s.parent(question) is greeting
    assert billing["event_id"] in _ancestor_ids(s, question)


def _ancestor_ids(s: Any, event: dict[str, Any]) -> list[str]:
    found = []
    while event["parent_id"] is not None:
        found.append(event["parent_id"])
        event = s.by_id[event["parent_id"]]
    return found


async def test_model_error_is_an_llm_error_of_its_request(
    ledger: Ledger, stored: StoredReader
) -> None:
    model = FakeLLM([Reply("req-1", fail=True)])
    async with AgentSession[Any](llm=model) as session:
        LedgerSessionObserver(ledger).attach(session)
        await session.start(WeatherAgent())
        with pytest.raises(Exception, match="scripted connection failure"):
            await session.run(user_input="Hello?")
    s = stored()
    error = s.one("llm_error")
    assert error["data"]["type"] == "APIConnectionError"
    assert error["data"]["error"] == "scripted connection failure"
    assert error["data"]["recoverable"] is False
    start = s.parent(error)
    assert start["event"] == "llm_start"
    assert s.parent(start)["event"] == "user_message"
    assert s.of("llm_end") == []


async def test_interrupted_reply(ledger: Ledger, stored: StoredReader) -> None:
    words = " ".join(f"w{i}" for i in range(60))
    model = FakeLLM([Reply("req-1", text=words, delay_s=0.03)])
    async with AgentSession[Any](llm=model) as session:
        LedgerSessionObserver(ledger).attach(session)
        await session.start(WeatherAgent())
        handle = session.generate_reply(user_input="Tell me a long story.")
        await asyncio.sleep(0.4)
        await session.interrupt()
        await handle
        assert handle.interrupted
    s = stored()
    reply = s.one("assistant_response")
    assert reply["data"]["interrupted"] is True
    assert 0 < len(reply["data"]["text"]) < len(words)
    interrupted = s.one("interrupted")
    assert s.parent(interrupted) is reply
    assert interrupted["data"]["reason"] == "interrupted"  # session.interrupt(), not the user
    # What the model produced is unknown (only the spoken part was seen).
    end = s.parent(reply)
    assert end["event"] == "llm_end"
    assert end["data"]["text"] is None


async def test_transcript_level_logs_messages_only(
    run_session: RunSession, stored: StoredReader
) -> None:
    await run_session(
        [
            Reply("req-1", calls=[("get_weather", {"city": "Kyiv"}, "call-1")]),
            Reply("req-2", text="Sunny in Kyiv."),
        ],
        ["Weather in Kyiv?"],
        level="transcript",
    )
    s = stored()
    assert set(s.types()) == {"session_start", "user_message", "assistant_response", "session_end"}
    assert s.parent(s.one("assistant_response")) is s.one("user_message")


async def test_verbose_level_adds_states_and_metrics(
    run_session: RunSession, stored: StoredReader
) -> None:
    await run_session([Reply("req-1", text="Hi.")], ["Hello"], level="verbose")
    s = stored()
    states = [(e["data"]["key"], e["data"]["value"]) for e in s.of("state_set")]
    assert ("agent_state", "thinking") in states
    assert ("agent_state", "speaking") in states
    (metrics,) = s.of("livekit.metrics")
    assert metrics["data"]["request_id"] == "req-1"
    assert s.parent(metrics)["event"] == "user_message"
    assert s.one("assistant_response")["data"]["metrics"]["llm_node_ttft"] > 0


class _ExplodingLedger:
    """A ledger whose ``log`` raises ``TypeError``: the one exception LiveKit re-raises."""

    calls = 0

    def log(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        raise TypeError("ledger exploded")


@pytest.mark.allow_internal_errors
async def test_a_failing_ledger_never_breaks_the_session(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broken = _ExplodingLedger()
    model = FakeLLM(
        [
            Reply("req-1", calls=[("get_weather", {"city": "Quito"}, "call-1")]),
            Reply("req-2", text="Sunny in Quito."),
        ]
    )
    with caplog.at_level(logging.ERROR, logger="agentledger"):
        async with AgentSession[Any](llm=model) as session:
            LedgerSessionObserver(broken).attach(session)  # type: ignore[arg-type]
            await session.start(WeatherAgent())
            result = await session.run(user_input="Weather in Quito?")
    result.expect.next_event().is_function_call(name="get_weather")
    result.expect.next_event().is_function_call_output(output="sunny in Quito")
    result.expect.next_event().is_message(role="assistant")
    result.expect.no_more_events()
    assert broken.calls > 3
    swallowed = [r for r in caplog.records if r.name == "agentledger" and r.exc_info]
    assert swallowed and all("livekit." in r.getMessage() for r in swallowed)


async def test_detach_stops_logging(ledger: Ledger, stored: StoredReader) -> None:
    model = FakeLLM([Reply("req-1", text="Hi.")])
    observer = LedgerSessionObserver(ledger)
    async with AgentSession[Any](llm=model) as session:
        observer.attach(session)
        with pytest.raises(RuntimeError, match="already attached"):
            observer.attach(session)
        observer.detach()
        observer.detach()  # idempotent
        await session.start(WeatherAgent())
        await session.run(user_input="Hello")
    assert set(stored().types()) == {"session_start"}


async def test_session_id_defaults_to_the_job_id(ledger: Ledger, stored: StoredReader) -> None:
    model = FakeLLM([Reply("req-1", text="Hi.")])
    async with AgentSession[Any](llm=model) as session:
        with fake_job_context(job_id="AJ_test_job_42"):
            observer = LedgerSessionObserver(ledger).attach(session)
        await session.start(WeatherAgent())
        await session.run(user_input="Hello")
    assert observer.session_id == "AJ_test_job_42"
    s = stored()
    assert {e["session_id"] for e in s.events} == {"AJ_test_job_42"}
    assert s.one("session_start")["data"]["job_id"] == "AJ_test_job_42"


def test_unknown_level_is_a_value_error(ledger: Ledger) -> None:
    with pytest.raises(ValueError, match="transcript, standard, verbose"):
        LedgerSessionObserver(ledger, level="chatty")  # type: ignore[arg-type]


def test_missing_extra_names_it() -> None:
    code = "import sys; sys.modules['livekit'] = None\nimport agentledger.integrations.livekit\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    assert "pip install 'agentledger[livekit]'" in done.stderr


async def test_attach_to_a_running_session(ledger: Ledger, stored: StoredReader) -> None:
    model = FakeLLM([Reply("req-1", text="Hi."), Reply("req-2", text="Bye.")])
    async with AgentSession[Any](llm=model) as session:
        await session.start(WeatherAgent())
        await session.run(user_input="Hello")
        LedgerSessionObserver(ledger).attach(session)
        await session.run(user_input="Goodbye")
    s = stored()
    assert [u["data"]["text"] for u in s.of("user_message")] == ["Goodbye"]
    agent = s.one("step_start", name="weather_agent")
    assert s.parent(agent) is s.one("session_start")
    start = s.one("llm_start")
    # The request saw the whole conversation, including the turn before attach().
    assert [m.get("text") for m in start["data"]["messages"]] == ["Hello", "Hi.", "Goodbye"]
    assert start["data"]["tools"] == ["book_flight", "get_time", "get_weather"]
    assert s.parent(s.one("assistant_response"))["data"]["request_id"] == "req-2"


async def test_one_observer_for_two_sessions_in_turn(ledger: Ledger, stored: StoredReader) -> None:
    observer = LedgerSessionObserver(ledger)
    ids = []
    for text in ("first", "second"):
        async with AgentSession[Any](llm=FakeLLM([Reply("req", text=text)])) as session:
            observer.attach(session)
            await session.start(WeatherAgent())
            await session.run(user_input="Hello")
        ids.append(observer.session_id)  # close detached it
    assert ids[0] != ids[1]
    s = stored()
    for session_id, text in zip(ids, ("first", "second"), strict=True):
        mine = [e for e in s.events if e["session_id"] == session_id]
        assert [e["event"] for e in mine].count("session_start") == 1
        assert [e["event"] for e in mine].count("session_end") == 1
        (reply,) = [e for e in mine if e["event"] == "assistant_response"]
        assert reply["data"]["text"] == text
        assert s.ancestors(reply)[0] == "session_start"
        assert s.by_id[reply["parent_id"]]["session_id"] == session_id


def test_exported_members() -> None:
    import agentledger.integrations.livekit as module

    assert sorted(module.__all__) == [
        "LEVELS",
        "LedgerSessionObserver",
        "Level",
        "SupportsLog",
        "instrument",
    ]
    public = {n for n in vars(module) if not n.startswith("_") and n not in {"annotations"}}
    defined_here = {
        n for n in public if getattr(getattr(module, n), "__module__", None) == module.__name__
    }
    assert defined_here <= set(module.__all__)
    for name in module.__all__:
        assert hasattr(module, name)
