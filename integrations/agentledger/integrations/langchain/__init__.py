"""LangChain and LangGraph integration: a callback handler that logs every step with its cause.

Usage::

    from agentledger.integrations.langchain import instrument

    graph = instrument(graph, ledger, session_id="ticket-42")   # every invoke/stream is logged
    handler = instrument(None, ledger)                         # or: config={"callbacks": [handler]}

How hooks map to events, sessions and guarantees: ``docs/design/integrations-langchain.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, overload

from agentledger.integrations._shared import (
    LedgerLike,
    UnsupportedTargetError,
    max_scopes_option,
    missing_extra,
)

try:
    from langchain_core.runnables import Runnable
except ImportError as error:
    raise missing_extra(__name__, "langchain") from error

from agentledger.integrations.langchain._handler import CUSTOM_EVENT, LedgerCallbackHandler

__all__ = ["CUSTOM_EVENT", "LedgerCallbackHandler", "SupportsLog", "instrument"]

#: What the handler needs from a ledger (kept name; the shape every integration shares).
SupportsLog = LedgerLike

_In = TypeVar("_In")
_Out = TypeVar("_Out")


@overload
def instrument(
    target: None,
    ledger: LedgerLike,
    *,
    session_id: str | None = ...,
    metadata: Mapping[str, Any] | None = ...,
    max_scopes: int | None = ...,
    capture_tokens: bool = ...,
    max_field_chars: int = ...,
    max_runs: int | None = ...,
) -> LedgerCallbackHandler: ...


@overload
def instrument(
    target: Runnable[_In, _Out],
    ledger: LedgerLike,
    *,
    session_id: str | None = ...,
    metadata: Mapping[str, Any] | None = ...,
    max_scopes: int | None = ...,
    capture_tokens: bool = ...,
    max_field_chars: int = ...,
    max_runs: int | None = ...,
) -> Runnable[_In, _Out]: ...


def instrument(
    target: Runnable[_In, _Out] | None,
    ledger: LedgerLike,
    *,
    session_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    max_scopes: int | None = None,
    capture_tokens: bool = False,
    max_field_chars: int = 4_000,
    max_runs: int | None = None,
) -> Runnable[_In, _Out] | LedgerCallbackHandler:
    """Log a runnable's runs to ``ledger``: the one-line integration.

    LangChain attaches callbacks through a run's config, so for a runnable (a chain, a model,
    an agent, a compiled LangGraph graph) this returns ``target.with_config(callbacks=[h])``
    for a new :class:`LedgerCallbackHandler` ``h``: use the returned object in place of
    ``target`` and every ``invoke`` / ``stream`` / ``batch`` (sync or async) is logged,
    callbacks given at call time included. A compiled graph stays a compiled graph (LangGraph's
    ``with_config`` returns a copy of the graph); other runnables come back as a
    ``RunnableBinding``. ``target`` itself is not changed.

    With ``target=None`` the handler itself is returned, to pass as
    ``config={"callbacks": [handler]}`` per call (the same as ``LedgerCallbackHandler(...)``);
    keep it when you want its counters (``internal_errors``, ``open_runs``).

    Args:
        target: a ``langchain_core.runnables.Runnable``, or ``None``.
        ledger: an :class:`agentledger.client.Ledger` (anything with its non-blocking ``log``).
        session_id: put every event into this session; default: LangGraph's ``thread_id``,
            else one new session per root run.
        metadata: a JSON object attached as ``metadata`` to every event.
        max_scopes: open runs tracked at most (default 10 000); the oldest is evicted beyond.
        capture_tokens: keep the streamed tokens of a model call in its ``llm_end``.
        max_field_chars: strings longer than this are cut with a marker naming their size
            (the user's message, the answer and tool results are kept up to 65,000
            characters: a regression case replays them).
        max_runs: deprecated name of ``max_scopes`` (emits a ``DeprecationWarning``).

    Returns:
        The instrumented runnable, or the handler when ``target`` is ``None``.

    Raises:
        TypeError: ``target`` is neither a runnable nor ``None`` (an
            ``UnsupportedTargetError``, also a :class:`~agentledger.protocol.LedgerError`).
        ValueError: an option is out of range (an ``InvalidOptionError``, also a
            :class:`~agentledger.protocol.LedgerError`).
    """
    if target is not None and not isinstance(target, Runnable):
        raise UnsupportedTargetError(
            f"instrument() takes a LangChain Runnable or None, not {type(target).__name__}"
        )
    handler = LedgerCallbackHandler(
        ledger,
        session_id=session_id,
        metadata=metadata,
        capture_tokens=capture_tokens,
        max_field_chars=max_field_chars,
        max_scopes=max_scopes_option(max_scopes, max_runs, stacklevel=3),
    )
    if target is None:
        return handler
    return target.with_config(callbacks=[handler])
