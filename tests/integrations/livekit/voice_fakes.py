"""Offline voice I/O for AgentSession: a scripted streaming STT, a silent TTS, a microphone of
silence and a speaker that "plays" audio in real time. No room, no network, no native audio.

A VAD can add noises (speech without words) at scripted frames.

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
from livekit.agents import stt, tts, vad
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
    """Takes frames and reports playback finished after their duration, in real time.

    Args:
        pause: support ``pause()`` / ``resume()``: LiveKit then pauses a reply on a possible
            interruption and resumes it when no words follow (a false interruption).
    """

    def __init__(self, *, pause: bool = False) -> None:
        super().__init__(
            label="real-time-speaker",
            capabilities=io.AudioOutputCapabilities(pause=pause),
            sample_rate=SAMPLE_RATE,
        )
        self._queued_s = 0.0  # audio of the current segment (seconds)
        self._played_s = 0.0  # played before the last pause (seconds)
        self._resumed_at: float | None = None  # loop time playback (re)started
        self._flushed = False
        self._timer: asyncio.TimerHandle | None = None

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    def _position(self) -> float:
        running = self._now() - self._resumed_at if self._resumed_at is not None else 0.0
        return min(self._queued_s, self._played_s + running)

    async def capture_frame(self, frame: rtc.AudioFrame) -> None:
        await super().capture_frame(frame)
        if self._queued_s == 0.0:
            self._resumed_at = self._now()
            self.on_playback_started(created_at=time.time())
        self._queued_s += frame.duration

    def flush(self) -> None:
        super().flush()
        self._flushed = True
        if self._resumed_at is not None:
            self._schedule()

    def _schedule(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        remaining = max(0.0, self._queued_s - self._position())
        self._timer = asyncio.get_running_loop().call_later(remaining, self._finish, False)

    def pause(self) -> None:
        if self._resumed_at is not None:
            self._played_s, self._resumed_at = self._position(), None
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def resume(self) -> None:
        if self._resumed_at is None and self._queued_s > 0.0:
            self._resumed_at = self._now()
            if self._flushed:
                self._schedule()

    def clear_buffer(self) -> None:
        self._finish(True)

    def _finish(self, interrupted: bool) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        played = self._position()
        self._queued_s = self._played_s = 0.0
        self._resumed_at, self._flushed = None, False
        self.on_playback_finished(playback_position=played, interrupted=interrupted)


class NoiseVADStream(vad.VADStream):
    def __init__(self, model: NoiseVAD, noises: Sequence[tuple[int, int]]) -> None:
        super().__init__(model)
        self._noises = list(noises)

    async def _main_task(self) -> None:
        frames, speaking, speech_s, silence_s = 0, False, 0.0, 0.0
        async for frame in self._input_ch:
            if isinstance(frame, self._FlushSentinel):
                continue
            frames += 1
            active = any(start <= frames < end for start, end in self._noises)
            if active and not speaking:
                speaking, speech_s, silence_s = True, 0.0, 0.0
                self._send(vad.VADEventType.START_OF_SPEECH, frame, 0.0, 0.0, speaking=True)
            if active:
                speech_s += frame.duration
            else:
                silence_s += frame.duration
            self._send(
                vad.VADEventType.INFERENCE_DONE,
                frame,
                speech_s,
                0.0 if active else silence_s,
                speaking=active,
            )
            if speaking and not active:
                speaking = False
                self._send(vad.VADEventType.END_OF_SPEECH, frame, speech_s, silence_s)
                speech_s = 0.0

    def _send(
        self,
        kind: vad.VADEventType,
        frame: rtc.AudioFrame,
        speech_s: float,
        silence_s: float,
        *,
        speaking: bool = False,
    ) -> None:
        self._event_ch.send_nowait(
            vad.VADEvent(
                type=kind,
                samples_index=0,
                timestamp=time.time(),
                speech_duration=speech_s,
                silence_duration=silence_s,
                frames=[frame],
                speaking=speaking,
                probability=1.0 if speaking else 0.0,
                raw_accumulated_speech=speech_s,
                raw_accumulated_silence=silence_s,
            )
        )


class NoiseVAD(vad.VAD):
    """Hears "speech" (no words) in the scripted ``(first frame, end frame)`` ranges."""

    def __init__(self, noises: Sequence[tuple[int, int]]) -> None:
        super().__init__(capabilities=vad.VADCapabilities(update_interval=FRAME_MS / 1000))
        self._noises = list(noises)

    def stream(self) -> NoiseVADStream:
        return NoiseVADStream(self, self._noises)
