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

from agentledger.integrations._shared import LedgerLike, max_scopes_option, missing_extra

try:
    import pydantic_ai  # noqa: F401
except ImportError as error:
    raise missing_extra(__name__, "pydantic-ai") from error

from agentledger.integrations.pydantic_ai._capability import LedgerCapability, SessionOption

__all__ = ["LedgerCapability", "SessionOption", "instrument"]


def instrument(
    ledger: LedgerLike,
    *,
    session_id: SessionOption = None,
    metadata: Mapping[str, Any] | None = None,
    max_scopes: int | None = None,
) -> LedgerCapability:
    """A :class:`LedgerCapability` to pass as ``capabilities=[...]`` to ``Agent(...)`` (every
    run) or to one ``run`` / ``run_sync`` / ``run_stream`` / ``iter`` call.

    Raises:
        ValueError: ``max_scopes`` is below 1 (an ``InvalidOptionError``).
    """
    return LedgerCapability(
        ledger,
        session_id=session_id,
        metadata=metadata,
        max_scopes=max_scopes_option(max_scopes, stacklevel=3),
    )
