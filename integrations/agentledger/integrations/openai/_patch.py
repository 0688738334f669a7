"""Wrapping ``create`` of a client's ``chat.completions`` and ``responses`` resources.

The wrappers are set as attributes of the client's own resource objects (the SDK caches them
on the client), so only that client is instrumented; a copy made with ``with_options()`` or
``copy()`` is not. Calls carrying the SDK's raw-response header (``with_raw_response``,
``with_streaming_response``) go straight to the SDK, unrecorded, since they return the HTTP
response rather than the parsed result.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from agentledger.client import capture_internal_exceptions
from agentledger.integrations.openai._outcome import chat_outcome, response_outcome
from agentledger.integrations.openai._recorder import Call, Recorder
from agentledger.integrations.openai._streams import AsyncRecordedStream, RecordedStream

__all__ = ["wrap_async", "wrap_sync"]

#: The header ``with_raw_response`` / ``with_streaming_response`` add to a call.
RAW_RESPONSE_HEADER = "x-stainless-raw-response"


def _raw(kwargs: Mapping[str, Any]) -> bool:
    headers = kwargs.get("extra_headers")
    if not isinstance(headers, Mapping):
        return False
    return any(isinstance(k, str) and k.lower() == RAW_RESPONSE_HEADER for k in headers)


def _returned(recorder: Recorder, call: Call | None, result: Any, stream_cls: type) -> Any:
    """What the wrapper returns: the SDK's result, or for a stream a recording stand-in
    (the SDK's stream itself if building one failed)."""
    if call is None:
        return result
    if isinstance(result, stream_cls):
        with capture_internal_exceptions(f"openai.{call.api}.stream_start"):
            wrapper = (
                AsyncRecordedStream if stream_cls.__name__ == "AsyncStream" else RecordedStream
            )
            return wrapper(result, recorder, call)
        return result
    outcome = None
    with capture_internal_exceptions(f"openai.{call.api}.result"):
        outcome = chat_outcome(result) if call.api == "chat" else response_outcome(result)
    if outcome is not None:
        recorder.end(call, outcome)
    return result


def wrap_sync(
    create: Callable[..., Any], api: str, recorder: Recorder, stream_cls: type
) -> Callable[..., Any]:
    """A sync ``create`` that records the call around the SDK's own."""

    @functools.wraps(create)
    def recorded_create(*args: Any, **kwargs: Any) -> Any:
        if _raw(kwargs):
            return create(*args, **kwargs)
        call = recorder.start(api, kwargs)
        try:
            result = create(*args, **kwargs)
        except BaseException as error:
            recorder.fail(call, error)
            raise
        return _returned(recorder, call, result, stream_cls)

    return recorded_create


def wrap_async(
    create: Callable[..., Awaitable[Any]], api: str, recorder: Recorder, stream_cls: type
) -> Callable[..., Awaitable[Any]]:
    """An async ``create`` that records the call around the SDK's own."""

    @functools.wraps(create)
    async def recorded_create(*args: Any, **kwargs: Any) -> Any:
        if _raw(kwargs):
            return await create(*args, **kwargs)
        call = recorder.start(api, kwargs)
        try:
            result = await create(*args, **kwargs)
        except BaseException as error:
            recorder.fail(call, error)
            raise
        return _returned(recorder, call, result, stream_cls)

    return recorded_create
