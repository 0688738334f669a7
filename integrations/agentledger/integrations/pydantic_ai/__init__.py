"""Pydantic AI integration: a capability whose hooks log every run's model requests, tool
calls and answers with their causes.

Usage::

    from agentledger.integrations.pydantic_ai import LedgerCapability

    agent = Agent("openai:gpt-5", tools=[...], capabilities=[LedgerCapability(ledger)])
    agent.run_sync("refund order 42")      # or one run: agent.run(..., capabilities=[...])

What each hook records: the "Pydantic AI" section of ``docs/pages/integrations.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentledger.integrations._shared import (
    LedgerLike,
    UnsupportedTargetError,
    max_scopes_option,
    missing_extra,
)

try:
    from pydantic_ai.agent import AbstractAgent, WrapperAgent
except ImportError as error:
    raise missing_extra(__name__, "pydantic-ai") from error

from agentledger.integrations.pydantic_ai._capability import LedgerCapability, SessionOption

__all__ = ["LedgerCapability", "SessionOption", "instrument"]


def instrument(
    target: AbstractAgent[Any, Any],
    ledger: LedgerLike,
    *,
    session_id: SessionOption = None,
    metadata: Mapping[str, Any] | None = None,
    max_scopes: int | None = None,
) -> AbstractAgent[Any, Any]:
    """``target`` wrapped so that every run of it is recorded: a ``WrapperAgent`` whose runs
    (``run``, ``run_sync``, ``run_stream``, ``iter``) get a :class:`LedgerCapability` added.
    The agent itself is not changed; to record it wherever it runs, give the capability to
    ``Agent(..., capabilities=[LedgerCapability(ledger)])`` instead.

    Raises:
        TypeError: ``target`` is not a Pydantic AI agent (an ``UnsupportedTargetError``).
        ValueError: ``max_scopes`` is below 1 (an ``InvalidOptionError``).
    """
    if not isinstance(target, AbstractAgent):
        raise UnsupportedTargetError(
            f"instrument() takes a pydantic_ai agent, not {type(target).__name__}"
        )
    capability = LedgerCapability(
        ledger,
        session_id=session_id,
        metadata=metadata,
        max_scopes=max_scopes_option(max_scopes, stacklevel=3),
    )
    return _RecordedAgent(target, capability)


class _RecordedAgent(WrapperAgent[Any, Any]):
    """``wrapped`` with a :class:`LedgerCapability` added to every run (through ``iter``,
    which ``run``, ``run_sync``, ``run_stream`` and ``run_stream_events`` go through)."""

    def __init__(self, wrapped: AbstractAgent[Any, Any], capability: LedgerCapability) -> None:
        super().__init__(wrapped)
        self.ledger_capability = capability

    def iter(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["capabilities"] = [*(kwargs.get("capabilities") or ()), self.ledger_capability]
        return super().iter(*args, **kwargs)
