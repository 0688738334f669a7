"""Streamed calls: wrappers that hand the SDK's chunks to the caller unchanged and log the
``llm_end`` when the stream ends, fails (``llm_error``) or is closed before its end.

A wrapper stands in for the SDK's ``Stream`` / ``AsyncStream``: it iterates, works as a
(async) context manager, has ``close()``, and passes every other attribute (``response``...)
to the stream it wraps. Chunks are folded into an :class:`~._outcome.Outcome` by an
accumulator per API; ``ttft_ms`` is the time from the call to the first chunk carrying output
(text or a tool call), ``streamed_chunks`` the number of chunks the caller received.
"""

from __future__ import annotations

import time
from typing import Any

from agentledger.client import capture_internal_exceptions
from agentledger.integrations.openai._outcome import (
    Outcome,
    ToolCall,
    chat_usage,
    response_outcome,
    response_tool_calls,
)
from agentledger.integrations.openai._recorder import Call, Recorder
from agentledger.integrations.openai._values import field as get
from agentledger.integrations.openai._values import parse_args

__all__ = ["Accumulator", "AsyncRecordedStream", "RecordedStream", "accumulator_for"]


class Accumulator:
    """Folds the chunks of one streamed call into an outcome (base: counts and timing)."""

    def __init__(self) -> None:
        self.chunks = 0
        self.first_output_s: float | None = None

    def add(self, chunk: Any) -> None:
        self.chunks += 1
        if self.first_output_s is None and self._has_output(chunk):
            self.first_output_s = time.perf_counter()
        self._fold(chunk)

    def _has_output(self, chunk: Any) -> bool:
        raise NotImplementedError

    def _fold(self, chunk: Any) -> None:
        raise NotImplementedError

    def _result(self) -> Outcome:
        raise NotImplementedError

    def outcome(self, started_s: float, *, closed_early: bool) -> Outcome:
        outcome = self._result()
        outcome.streamed_chunks = self.chunks
        if self.first_output_s is not None:
            outcome.ttft_ms = round((self.first_output_s - started_s) * 1000.0, 3)
        outcome.closed_early = closed_early
        return outcome


class ChatAccumulator(Accumulator):
    """``ChatCompletionChunk`` s: the first choice's deltas, tool calls by index, usage (only
    when the caller asked for it with ``stream_options``)."""

    def __init__(self) -> None:
        super().__init__()
        self._text: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish: str | None = None
        self._usage: Any = None
        self._model: str | None = None

    def _delta(self, chunk: Any) -> Any:
        for choice in get(chunk, "choices") or ():
            if (get(choice, "index") or 0) == 0:
                return choice
        return None

    def _has_output(self, chunk: Any) -> bool:
        delta = get(self._delta(chunk), "delta")
        return bool(get(delta, "content") or get(delta, "tool_calls"))

    def _fold(self, chunk: Any) -> None:
        model = get(chunk, "model")
        if isinstance(model, str) and model:
            self._model = model
        if get(chunk, "usage") is not None:
            self._usage = get(chunk, "usage")
        choice = self._delta(chunk)
        if choice is None:
            return
        delta = get(choice, "delta")
        content = get(delta, "content")
        if isinstance(content, str):
            self._text.append(content)
        for part in get(delta, "tool_calls") or ():
            index = get(part, "index")
            call = self._calls.setdefault(index if isinstance(index, int) else 0, {"args": []})
            if isinstance(get(part, "id"), str):
                call["id"] = get(part, "id")
            function = get(part, "function")
            if isinstance(get(function, "name"), str):
                call["name"] = get(function, "name")
            if isinstance(get(function, "arguments"), str):
                call["args"].append(get(function, "arguments"))
        reason = get(choice, "finish_reason")
        if isinstance(reason, str) and reason:
            self._finish = reason

    def _result(self) -> Outcome:
        calls = [
            ToolCall(c.get("id"), c.get("name") or "tool", parse_args("".join(c["args"])))
            for _, c in sorted(self._calls.items())
        ]
        return Outcome(
            text="".join(self._text),
            finish_reason=self._finish,
            tool_calls=calls,
            usage=chat_usage(self._usage, self._model),
            response_model=self._model,
        )


_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})


class ResponsesAccumulator(Accumulator):
    """Responses stream events: the final ``response`` when one arrives, else the text deltas
    and the finished output items seen so far."""

    def __init__(self) -> None:
        super().__init__()
        self._final: Any = None
        self._text: list[str] = []
        self._items: list[Any] = []
        self._model: str | None = None

    def _has_output(self, chunk: Any) -> bool:
        kind = get(chunk, "type")
        return isinstance(kind, str) and kind.endswith(".delta")

    def _fold(self, chunk: Any) -> None:
        kind = get(chunk, "type")
        if kind in _FINAL_EVENTS:
            self._final = get(chunk, "response")
        elif kind == "response.created":
            model = get(get(chunk, "response"), "model")
            self._model = model if isinstance(model, str) else None
        elif kind == "response.output_text.delta" and isinstance(get(chunk, "delta"), str):
            self._text.append(get(chunk, "delta"))
        elif kind == "response.output_item.done":
            self._items.append(get(chunk, "item"))

    def _result(self) -> Outcome:
        if self._final is not None:
            return response_outcome(self._final)
        return Outcome(
            text="".join(self._text),
            finish_reason=None,
            tool_calls=response_tool_calls(self._items),
            response_model=self._model,
        )


def accumulator_for(api: str) -> Accumulator:
    return ChatAccumulator() if api == "chat" else ResponsesAccumulator()


class _Recording:
    """What the sync and async wrappers share: the chunks seen and logging the end once."""

    def __init__(self, stream: Any, recorder: Recorder, call: Call) -> None:
        self._stream = stream
        self._recorder = recorder
        self._call = call
        self._chunks = accumulator_for(call.api)
        self._done = False

    def _seen(self, chunk: Any) -> None:
        with capture_internal_exceptions(f"openai.{self._call.api}.stream"):
            self._chunks.add(chunk)

    def _finish(self, *, closed_early: bool) -> None:
        if self._done:
            return
        self._done = True
        outcome: Outcome | None = None
        with capture_internal_exceptions(f"openai.{self._call.api}.stream_end"):
            outcome = self._chunks.outcome(self._call.started_s, closed_early=closed_early)
        if outcome is not None:
            self._recorder.end(self._call, outcome)

    def _failed(self, error: BaseException) -> None:
        if self._done:
            return
        self._done = True
        self._recorder.fail(self._call, error)

    def __del__(self) -> None:
        # a stream dropped before its end (``for chunk in stream: break``) still logs what it
        # received; never reached for a stream that ended, failed or was closed
        if self.__dict__.get("_done") is False:
            self._finish(closed_early=True)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_stream":  # not set yet, or a protocol method
            raise AttributeError(name)
        return getattr(self._stream, name)


class RecordedStream(_Recording):
    """Stands in for a ``openai.Stream``: same chunks, same ``close()`` / ``with``."""

    def __iter__(self) -> RecordedStream:
        return self

    def __next__(self) -> Any:
        try:
            chunk = self._stream.__next__()
        except StopIteration:
            self._finish(closed_early=False)
            raise
        except BaseException as error:
            self._failed(error)
            raise
        self._seen(chunk)
        return chunk

    def close(self) -> None:
        """Close the SDK's stream; a stream closed before its end logs what it received."""
        try:
            self._stream.close()
        finally:
            self._finish(closed_early=True)

    def __enter__(self) -> RecordedStream:
        self._stream.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        try:
            self._stream.__exit__(*exc_info)
        finally:
            self._finish(closed_early=True)


class AsyncRecordedStream(_Recording):
    """Stands in for a ``openai.AsyncStream``: same chunks, same ``close()`` / ``async with``."""

    def __aiter__(self) -> AsyncRecordedStream:
        return self

    async def __anext__(self) -> Any:
        try:
            chunk = await self._stream.__anext__()
        except StopAsyncIteration:
            self._finish(closed_early=False)
            raise
        except BaseException as error:
            self._failed(error)
            raise
        self._seen(chunk)
        return chunk

    async def close(self) -> None:
        """Close the SDK's stream; a stream closed before its end logs what it received."""
        try:
            await self._stream.close()
        finally:
            self._finish(closed_early=True)

    async def __aenter__(self) -> AsyncRecordedStream:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        try:
            await self._stream.__aexit__(*exc_info)
        finally:
            self._finish(closed_early=True)
