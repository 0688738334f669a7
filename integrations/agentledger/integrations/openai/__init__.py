"""OpenAI Python SDK integration: every model call of an ``OpenAI`` / ``AsyncOpenAI`` client
logged with its causes, so a plain chatbot is a first-class source of sessions.

Usage::

    from openai import OpenAI
    from agentledger.integrations.openai import instrument_openai

    client = instrument_openai(OpenAI(), ledger, session_id="ticket-42")
    client.chat.completions.create(model="gpt-4o-mini", messages=[...])   # logged

What each call records, and what the capture cannot see: the "OpenAI SDK" section of
``docs/pages/integrations.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from agentledger.integrations._shared import (
    AlreadyAttachedError,
    LedgerLike,
    UnsupportedTargetError,
    max_scopes_option,
    missing_extra,
)

try:
    import openai
except ImportError as error:
    raise missing_extra(__name__, "openai") from error

from agentledger.integrations.openai._patch import wrap_async, wrap_sync
from agentledger.integrations.openai._recorder import Recorder, SessionOption

__all__ = ["SessionOption", "SupportsLog", "instrument", "instrument_openai"]

#: What the capture needs from a ledger (the shape every integration shares).
SupportsLog = LedgerLike

#: The attribute of an instrumented client that holds its recorder.
_MARK = "_agentledger_recorder"

_Client = TypeVar("_Client", "openai.OpenAI", "openai.AsyncOpenAI")


def instrument_openai(
    client: _Client,
    ledger: LedgerLike,
    *,
    agent: str | None = None,
    session_id: SessionOption = None,
    metadata: Mapping[str, Any] | None = None,
    max_scopes: int | None = None,
) -> _Client:
    """Log every ``chat.completions.create`` and ``responses.create`` call of ``client``.

    Works for ``openai.OpenAI`` and ``openai.AsyncOpenAI`` (and their Azure subclasses),
    streamed calls included: with ``stream=True`` the call returns a stand-in for the SDK's
    stream that yields the same chunks unchanged and logs ``llm_end`` when the stream ends or
    is closed (``close()`` or leaving its ``with`` block). The request is never changed (a
    streamed chat call's usage is known only when the caller asked for it with
    ``stream_options={"include_usage": True}``; otherwise it is logged as unknown, ``null``).

    Per call it logs ``user_message`` (a new user turn), ``tool_result`` (a tool result the
    app sends back, the child of the ``tool_call`` it answers), ``llm_start`` (caused by those
    inputs), then ``llm_end`` and either a ``tool_call`` per requested tool or the
    ``assistant_response``; ``llm_error`` when the SDK raises (the exception is re-raised
    unchanged). Nothing of ours ever raises into the call: an error in the capture is logged
    on the ``agentledger`` logger, and the SDK's result or exception reaches the caller as it
    is. Calls through ``with_raw_response`` / ``with_streaming_response`` are not recorded.

    Args:
        client: the client to instrument, in place.
        ledger: an :class:`agentledger.client.Ledger` (anything with its non-blocking ``log``).
        agent: log the events under this agent name (a ledger whose ``log`` takes ``agent=``);
            default: the ledger's own agent.
        session_id: the session of every call; or a function called at each call that returns
            it (e.g. reading the current user's conversation id from a context variable; a
            ``None`` it returns means the default). Default: one new session for this client.
        metadata: a JSON object attached as ``metadata`` to every event.
        max_scopes: conversations remembered at most (default 10 000), and per conversation
            tool calls and results at most; the least recently used are forgotten beyond.

    Returns:
        ``client`` itself, instrumented.

    Raises:
        TypeError: ``client`` is not an ``OpenAI`` or ``AsyncOpenAI`` client (an
            ``UnsupportedTargetError``, also a :class:`~agentledger.protocol.LedgerError`).
        RuntimeError: ``client`` is instrumented already (an ``AlreadyAttachedError``).
        ValueError: ``max_scopes`` is below 1 (an ``InvalidOptionError``).
    """
    if not isinstance(client, openai.OpenAI | openai.AsyncOpenAI):
        raise UnsupportedTargetError(
            "instrument_openai() takes an openai.OpenAI or openai.AsyncOpenAI client, "
            f"not {type(client).__name__}"
        )
    if getattr(client, _MARK, None) is not None:
        raise AlreadyAttachedError("this OpenAI client is instrumented already")
    recorder = Recorder(
        ledger,
        agent=agent,
        session_id=session_id,
        metadata=metadata,
        max_scopes=max_scopes_option(max_scopes, stacklevel=3),
    )
    resources: tuple[tuple[str, Any], ...] = (
        ("chat", client.chat.completions),
        ("responses", client.responses),
    )
    for api, resource in resources:
        if isinstance(client, openai.AsyncOpenAI):
            resource.create = wrap_async(resource.create, api, recorder, openai.AsyncStream)
        else:
            resource.create = wrap_sync(resource.create, api, recorder, openai.Stream)
    setattr(client, _MARK, recorder)
    return client


def instrument(
    target: _Client,
    ledger: LedgerLike,
    *,
    agent: str | None = None,
    session_id: SessionOption = None,
    metadata: Mapping[str, Any] | None = None,
    max_scopes: int | None = None,
) -> _Client:
    """The same as :func:`instrument_openai` (the name every integration package offers)."""
    return instrument_openai(
        target,
        ledger,
        agent=agent,
        session_id=session_id,
        metadata=metadata,
        max_scopes=max_scopes,
    )
