"""LiveKit Agents integration: log an ``AgentSession`` as a causal tree.

Usage::

    from agentledger.integrations.livekit import instrument

    session = AgentSession(llm=..., stt=..., tts=..., vad=...)
    instrument(session, ledger, metadata={"config": "v3"})   # before session.start(...)

Which session events become which ledger events, where the links come from and why not
OpenTelemetry: ``docs/design/integrations-livekit.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentledger.integrations._shared import TimedLedgerLike, missing_extra

try:
    from livekit.agents import AgentSession
except ImportError as error:
    raise missing_extra(__name__, "livekit") from error

from agentledger.integrations.livekit._observer import LEVELS, LedgerSessionObserver, Level

__all__ = ["LEVELS", "LedgerSessionObserver", "Level", "SupportsLog", "instrument"]

#: What the observer needs from a ledger (kept name; the shape every integration shares).
SupportsLog = TimedLedgerLike


def instrument(
    session: AgentSession[Any],
    ledger: TimedLedgerLike,
    *,
    session_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    max_scopes: int | None = None,
    level: Level = "standard",
) -> LedgerSessionObserver:
    """Log ``session`` to ``ledger``: the one-line integration.

    The same as ``LedgerSessionObserver(ledger, ...).attach(session)``: call it before
    ``session.start(...)`` to see the first agent and greeting. The returned observer detaches
    itself when the session closes; call its ``detach()`` to stop earlier.

    Args:
        session: a ``livekit.agents.AgentSession``.
        ledger: an :class:`agentledger.client.Ledger` (anything with its non-blocking ``log``).
        session_id: ledger session id; default: the LiveKit job id inside a job, else a new
            UUID4 hex.
        metadata: a JSON object attached as ``metadata`` to every event.
        max_scopes: open scopes tracked at most per table (running tool calls and ended call
            ids, default 1024; live speeches at most 64); the oldest is dropped beyond it.
        level: ``"transcript"``, ``"standard"`` (default) or ``"verbose"``.

    Returns:
        The attached :class:`LedgerSessionObserver`.

    Raises:
        ValueError: unknown ``level`` or ``max_scopes`` below 1 (an ``InvalidOptionError``,
            also a :class:`~agentledger.protocol.LedgerError`).
    """
    observer = LedgerSessionObserver(
        ledger, session_id=session_id, metadata=metadata, max_scopes=max_scopes, level=level
    )
    return observer.attach(session)
