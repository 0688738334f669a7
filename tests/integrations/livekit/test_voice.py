"""The voice path: microphone -> streaming STT -> turn end -> LLM -> TTS -> speaker, offline.

A scripted STT turns 10 ms frames of silence into transcripts at set frame numbers and a
silent TTS "speaks" in real time, so user transcripts (language, speaker, confidence), voice
latencies and a real barge-in reach the observer exactly as in a call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest
from livekit.agents import AgentSession

from agentledger.client import Ledger
from agentledger.integrations.livekit import LedgerSessionObserver

from .conftest import WeatherAgent
from .fakes import FakeLLM, Reply
from .voice_fakes import NoiseVAD, RealTimeSpeaker, ScriptedSTT, SilentMicrophone, SilentTTS

pytestmark = pytest.mark.livekit

StoredReader = Any


async def _call(
    ledger: Ledger,
    replies: Sequence[Reply],
    utterances: Sequence[tuple[int, str]],
    *,
    until_replies: int,
    level: Any = "standard",
    noises: Sequence[tuple[int, int]] = (),
    timeout_s: float = 20.0,
) -> AgentSession[Any]:
    """Run a voice session until the agent said ``until_replies`` messages, then close it.

    Without ``noises`` the STT ends turns and interrupts; with them a VAD hears the noises
    (and must cover the utterances too), ends turns and may pause a reply that LiveKit
    resumes when no words follow.
    """
    if noises:
        turn_handling: Any = {
            "turn_detection": "vad",
            "endpointing": {"min_delay": 0.05, "max_delay": 0.5},
            "interruption": {
                "mode": "vad",
                "min_words": 0,
                "min_duration": 0.3,
                "false_interruption_timeout": 0.3,
            },
        }
    else:
        turn_handling = {
            "turn_detection": "stt",
            "endpointing": {"min_delay": 0.05, "max_delay": 0.5},
            "interruption": {"resume_false_interruption": False, "min_words": 0},
        }
    session = AgentSession[Any](
        llm=FakeLLM(replies),
        stt=ScriptedSTT(utterances),
        tts=SilentTTS(),
        vad=NoiseVAD(noises) if noises else None,
        turn_handling=turn_handling,
        aec_warmup_duration=None,
    )
    LedgerSessionObserver(ledger, level=level).attach(session)
    session.input.audio = SilentMicrophone()
    session.output.audio = RealTimeSpeaker(pause=bool(noises))
    await session.start(WeatherAgent())
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            said = [
                item for item in session.history.items if getattr(item, "role", None) == "assistant"
            ]
            if len(said) >= until_replies and session.agent_state == "listening":
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError(f"the agent did not reply {until_replies} time(s) in time")
    finally:
        await session.aclose()
    return session


async def test_voice_turn_with_transcript_tool_and_latencies(
    ledger: Ledger, stored: StoredReader
) -> None:
    await _call(
        ledger,
        [
            Reply("req-1", calls=[("get_weather", {"city": "Paris"}, "call-v")]),
            Reply("req-2", text="It is sunny in Paris."),
        ],
        [(10, "what is the weather in Paris")],
        until_replies=1,
        level="verbose",
    )
    s = stored()
    user = s.one("user_message")
    assert user["data"]["text"] == "what is the weather in Paris"
    assert user["data"]["language"] == "en"
    assert user["data"]["speaker_id"] == "caller"
    assert user["data"]["transcript_confidence"] == pytest.approx(0.93)
    assert user["data"]["latency"]["end_of_turn_delay_ms"] >= 0
    partial = s.one("livekit.transcript_partial")
    assert partial["data"]["text"] == "what"

    call = s.one("tool_call")
    assert call["data"]["args"] == {"city": "Paris"}
    assert s.ancestors(call) == ["session_start", "user_message", "llm_start", "llm_end"]
    assert s.parent(s.one("tool_result")) is call
    reply = s.one("assistant_response")
    assert reply["data"]["text"] == "It is sunny in Paris."
    assert reply["data"]["interrupted"] is False
    assert reply["data"]["latency"]["tts_ttfb_ms"] >= 0
    assert reply["data"]["latency"]["llm_ttft_ms"] > 0
    assert s.parent(reply)["data"]["request_id"] == "req-2"
    tts_metrics = [m for m in s.of("livekit.metrics") if m["data"]["type"] == "tts_metrics"]
    assert tts_metrics and all(s.parent(m) is user for m in tts_metrics)


async def test_barge_in_interrupts_the_reply(ledger: Ledger, stored: StoredReader) -> None:
    story = " ".join(f"word{i}" for i in range(40))  # 2.4 s of speech
    await _call(
        ledger,
        [Reply("req-1", text=story), Reply("req-2", text="It is noon.")],
        # the caller talks over the story 0.8 s after asking for it
        [(10, "tell me a story"), (90, "stop what time is it")],
        until_replies=2,
    )
    s = stored()
    first, second = s.of("user_message")
    cut, answer = s.of("assistant_response")
    assert cut["data"]["interrupted"] is True
    assert "user_message" in s.ancestors(cut) and s.ancestors(cut)[1] == "user_message"
    barge_in = s.one("interrupted")
    assert s.parent(barge_in) is cut
    assert barge_in["data"] == {"reason": "barge_in", "speech_id": cut["data"]["speech_id"]}
    assert answer["data"] == {**answer["data"], "text": "It is noon.", "interrupted": False}
    assert s.parent(second) is cut  # what the caller heard before talking over it
    assert s.ancestors(answer)[-3:] == ["user_message", "llm_start", "llm_end"]
    assert s.by_id[s.parent(s.parent(s.parent(answer)))["event_id"]] is second
    assert s.parent(s.parent(s.parent(cut))) is first


async def test_false_interruption_is_resumed(ledger: Ledger, stored: StoredReader) -> None:
    story = " ".join(f"word{i}" for i in range(40))  # 2.4 s of speech
    await _call(
        ledger,
        [Reply("req-1", text=story)],
        [(25, "tell me a story")],
        # the caller's question, then a cough (no words) ~0.8 s into the reply
        noises=[(5, 30), (120, 160)],
        until_replies=1,
    )
    s = stored()
    false = s.one("interrupted")
    assert false["data"]["reason"] == "false_interruption"
    assert false["data"]["resumed"] is True
    reply = s.one("assistant_response")
    assert reply["data"]["text"] == story
    assert reply["data"]["interrupted"] is False
    assert false["data"]["speech_id"] == reply["data"]["speech_id"]
    # It happened to the reply being spoken: under that reply's model request.
    assert s.parent(false)["event"] in {"llm_start", "llm_end"}
    assert "user_message" in s.ancestors(false)
