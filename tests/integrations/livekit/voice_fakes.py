"""Offline voice I/O for AgentSession: a scripted streaming STT, a silent TTS, a microphone of
silence and a speaker that "plays" audio in real time. No room, no network, no native audio.

The STT hears nothing real: it counts the 10 ms frames the microphone feeds it and, at the
scripted frame numbers, emits start of speech, an interim and a final transcript, and end of
speech (with ``turn_detection="stt"`` that ends the user's turn).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from livekit import rtc
from livekit.agents import stt, tts
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, APIConnectOptions
from livekit.agents.voice import io

SAMPLE_RATE = 16000
FRAME_MS = 10
#: Audio the fake TTS makes per word of text (seconds).
SECONDS_PER_WORD = 0.06


def _silence(duration_s: float) -> bytes:
    return b"\0\0" * int(SAMPLE_RATE * duration_s)


class ScriptedSTTStream(stt.RecognizeStream):
    def __init__(
        self, model: ScriptedSTT, utterances: Sequence[tuple[int, str]], **kwargs: Any
    ) -> None:
        super().__init__(stt=model, **kwargs)
        self._plan = list(utterances)

    async def _run(self) -> None:
        frames = 0
        async for frame in self._input_ch:
            if isinstance(frame, self._FlushSentinel):
                continue
            frames += 1
            while self._plan and frames >= self._plan[0][0]:
                _, text = self._plan.pop(0)
                self._say(text)

    def _say(self, text: str) -> None:
        kind = stt.SpeechEventType
        first_word = stt.SpeechData(language="en", text=text.split()[0], speaker_id="caller")
        final = stt.SpeechData(language="en", text=text, confidence=0.93, speaker_id="caller")
        self._event_ch.send_nowait(stt.SpeechEvent(type=kind.START_OF_SPEECH))
        self._event_ch.send_nowait(
            stt.SpeechEvent(type=kind.INTERIM_TRANSCRIPT, alternatives=[first_word])
        )
        self._event_ch.send_nowait(
            stt.SpeechEvent(type=kind.FINAL_TRANSCRIPT, alternatives=[final])
        )
        self._event_ch.send_nowait(stt.SpeechEvent(type=kind.END_OF_SPEECH))


class ScriptedSTT(stt.STT):
    """Streams ``utterances``: ``(frame number, text)``, frames being 10 ms of microphone input."""

    def __init__(self, utterances: Sequence[tuple[int, str]]) -> None:
        super().__init__(capabilities=stt.STTCapabilities(streaming=True, interim_results=True))
        self._utterances = list(utterances)

    @property
    def model(self) -> str:
        return "scripted-stt"

    async def _recognize_impl(self, *args: Any, **kwargs: Any) -> stt.SpeechEvent:
        raise NotImplementedError("streaming only")

    def stream(
        self,
        *,
        language: Any = None,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
    ) -> ScriptedSTTStream:
        utterances, self._utterances = self._utterances, []
        return ScriptedSTTStream(self, utterances, conn_options=conn_options)


class SilentChunkedStream(tts.ChunkedStream):
    async def _run(self, output_emitter: tts.AudioEmitter) -> None:
        output_emitter.initialize(
            request_id="tts-" + str(abs(hash(self.input_text)) % 10_000),
            sample_rate=SAMPLE_RATE,
            num_channels=1,
            mime_type="audio/pcm",
        )
        output_emitter.push(_silence(SECONDS_PER_WORD * max(1, len(self.input_text.split()))))
        output_emitter.flush()


class SilentTTS(tts.TTS):
    """Synthesizes silence, :data:`SECONDS_PER_WORD` per word."""

    def __init__(self) -> None:
        super().__init__(
            capabilities=tts.TTSCapabilities(streaming=False),
            sample_rate=SAMPLE_RATE,
            num_channels=1,
        )

    def synthesize(
        self, text: str, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS
    ) -> SilentChunkedStream:
        return SilentChunkedStream(tts=self, input_text=text, conn_options=conn_options)


class SilentMicrophone(io.AudioInput):
    """10 ms frames of silence, in real time."""

    def __init__(self) -> None:
        super().__init__(label="silent-microphone")
        self._frame = rtc.AudioFrame(
            _silence(FRAME_MS / 1000), SAMPLE_RATE, 1, SAMPLE_RATE * FRAME_MS // 1000
        )

    async def __anext__(self) -> rtc.AudioFrame:
        await asyncio.sleep(FRAME_MS / 1000)
        return self._frame


class RealTimeSpeaker(io.AudioOutput):
    """Takes frames and reports playback finished after their duration (or at once if cleared)."""

    def __init__(self) -> None:
        super().__init__(
            label="real-time-speaker",
            capabilities=io.AudioOutputCapabilities(pause=False),
            sample_rate=SAMPLE_RATE,
        )
        self._queued_s = 0.0
        self._started: float | None = None
        self._timer: asyncio.TimerHandle | None = None

    async def capture_frame(self, frame: rtc.AudioFrame) -> None:
        await super().capture_frame(frame)
        if self._started is None:
            self._started = asyncio.get_running_loop().time()
            self.on_playback_started(created_at=time.time())
        self._queued_s += frame.duration

    def flush(self) -> None:
        super().flush()
        played, self._queued_s = self._queued_s, 0.0
        self._timer = asyncio.get_running_loop().call_later(played, self._finished, played, False)

    def clear_buffer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        started = self._started
        played = asyncio.get_running_loop().time() - started if started is not None else 0.0
        self._queued_s = 0.0
        self._finished(played, True)

    def _finished(self, played_s: float, interrupted: bool) -> None:
        self._started = None
        self.on_playback_finished(playback_position=played_s, interrupted=interrupted)
