"""CrewAI integration: an event-bus listener that logs a crew's runs as a causal tree.

Usage::

    from agentledger.integrations.crewai import instrument

    with instrument(crew, ledger, session_id="trip-42"):
        crew.kickoff(inputs={"topic": "..."})

How CrewAI events map to ledger events, ids, ordering and roll-ups:
``docs/design/integrations-crewai.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentledger.integrations._shared import missing_extra

try:
    import crewai.events  # noqa: F401
except ImportError as error:
    raise missing_extra(__name__, "crewai") from error

from agentledger.integrations.crewai._listener import LedgerCrewListener
from agentledger.integrations.crewai._writer import (
    EVENT_ID_NAMESPACE,
    SupportsLedger,
    ledger_event_id,
)

__all__ = [
    "EVENT_ID_NAMESPACE",
    "LedgerCrewListener",
    "SupportsLedger",
    "instrument",
    "instrument_crew",
    "ledger_event_id",
]


def instrument(
    crew: Any,
    ledger: SupportsLedger,
    *,
    session_id: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    max_scopes: int | None = None,
    max_field_chars: int = 4_000,
    flush_timeout_s: float = 10.0,
    max_wait_s: float = 2.0,
) -> LedgerCrewListener:
    """Log every kickoff of ``crew`` to ``ledger``: the one-line integration.

    Returns the registered listener (a CrewAI ``BaseEventListener``); use it as a context
    manager, or call its ``close()``, to stop logging and flush. Other crews running in the
    same process are not logged.

    Args:
        crew: a ``crewai.Crew`` (its runs by every kickoff method, and the copies
            ``kickoff_for_each`` and its async variants run), a ``Flow`` instance (its runs and
            everything they start), or ``None``: every crew and flow of the process.
        ledger: an :class:`agentledger.client.Ledger` (see :class:`SupportsLedger`).
        session_id: put every event into this session (default: one per kickoff).
        metadata: a JSON object attached as ``metadata`` to every event.
        max_scopes: open CrewAI scopes tracked at most (default 10 000); the oldest is
            evicted beyond it.
        max_field_chars: strings longer than this are cut with a marker naming their size.
        flush_timeout_s: default wait (seconds) of ``flush``, ``close`` and the exit hook.
        max_wait_s: longest wait (seconds) of an event for a cause the listener never saw.

    Returns:
        The registered :class:`LedgerCrewListener`.

    Raises:
        ValueError: an option is out of range (an ``InvalidOptionError``, also a
            :class:`~agentledger.protocol.LedgerError`).
        TypeError: ``crew`` is neither a ``Crew``, a ``Flow`` nor ``None`` (an
            ``UnsupportedTargetError``, also a :class:`~agentledger.protocol.LedgerError`).
    """
    return LedgerCrewListener(
        ledger,
        session_id=session_id,
        crew=crew,
        metadata=metadata,
        max_scopes=max_scopes,
        max_field_chars=max_field_chars,
        flush_timeout_s=flush_timeout_s,
        max_wait_s=max_wait_s,
    )


#: The name :func:`instrument` had before every integration got one (same function).
instrument_crew = instrument
