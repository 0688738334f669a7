"""OpenAI Agents SDK integration: a tracing processor that logs every agent run's model calls,
tool calls, handoffs and guardrails with their causes.

Usage::

    from agentledger.integrations.openai_agents import instrument_agents

    instrument_agents(ledger)            # agents.add_trace_processor(...) under the hood
    await Runner.run(agent, "refund order 42")

What each span records: the "OpenAI Agents SDK" section of ``docs/pages/integrations.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentledger.integrations._shared import LedgerLike, max_scopes_option, missing_extra

try:
    import agents
    from agents.tracing import Span, Trace, TracingProcessor
except ImportError as error:
    raise missing_extra(__name__, "openai-agents") from error

from agentledger.client import capture_internal_exceptions
from agentledger.integrations.openai_agents._recorder import Recorder, SessionOption

__all__ = ["LedgerTracingProcessor", "SessionOption", "instrument", "instrument_agents"]


class LedgerTracingProcessor(TracingProcessor):
    """An ``agents`` tracing processor writing each trace's spans to a ledger as events.

    Register it with ``agents.add_trace_processor(processor)`` (or :func:`instrument_agents`).
    Every hook is guarded: an error of ours is logged to the ``agentledger`` logger and the
    run goes on; a hook only builds dicts and calls the ledger's non-blocking ``log()``.

    Args:
        ledger: an :class:`agentledger.client.Ledger` (anything with its non-blocking ``log``).
        session_id: the session of every event; or a function of the SDK's ``Trace`` returning
            it (``None``: the default). Default: the trace's ``group_id`` when set, else its
            trace id.
        metadata: a JSON object attached as ``metadata`` to every event.
        max_scopes: open traces remembered at most (default 10 000); the oldest is forgotten
            beyond, and its later spans are not logged.
    """

    def __init__(
        self,
        ledger: LedgerLike,
        *,
        session_id: SessionOption = None,
        metadata: Mapping[str, Any] | None = None,
        max_scopes: int | None = None,
    ) -> None:
        self._recorder = Recorder(
            ledger,
            session_id=session_id,
            metadata=metadata,
            max_scopes=max_scopes_option(max_scopes, stacklevel=3),
            current_trace=agents.get_current_trace,
        )

    @property
    def evicted_traces(self) -> int:
        """Traces forgotten because ``max_scopes`` was reached."""
        return self._recorder.evicted

    def on_trace_start(self, trace: Trace) -> None:
        with capture_internal_exceptions("openai_agents.on_trace_start"):
            self._recorder.trace_start(trace)

    def on_trace_end(self, trace: Trace) -> None:
        with capture_internal_exceptions("openai_agents.on_trace_end"):
            self._recorder.trace_end(trace)

    def on_span_start(self, span: Span[Any]) -> None:
        with capture_internal_exceptions("openai_agents.on_span_start"):
            self._recorder.span_start(span)

    def on_span_end(self, span: Span[Any]) -> None:
        with capture_internal_exceptions("openai_agents.on_span_end"):
            self._recorder.span_end(span)

    def shutdown(self) -> None:
        """Nothing to release: the ledger client owns its buffer."""

    def force_flush(self) -> None:
        """Nothing is queued here: each event went to the ledger's ``log()`` as it happened."""


def instrument_agents(
    ledger: LedgerLike,
    *,
    session_id: SessionOption = None,
    metadata: Mapping[str, Any] | None = None,
    max_scopes: int | None = None,
) -> LedgerTracingProcessor:
    """Create a :class:`LedgerTracingProcessor` and add it to the SDK's trace processors
    (beside the SDK's own exporter, which keeps working). Returns the processor.

    Raises:
        ValueError: ``max_scopes`` is below 1 (an ``InvalidOptionError``).
    """
    processor = LedgerTracingProcessor(
        ledger, session_id=session_id, metadata=metadata, max_scopes=max_scopes
    )
    agents.add_trace_processor(processor)
    return processor


def instrument(
    target: LedgerLike,
    *,
    session_id: SessionOption = None,
    metadata: Mapping[str, Any] | None = None,
    max_scopes: int | None = None,
) -> LedgerTracingProcessor:
    """The same as :func:`instrument_agents` (the SDK's processors are global, so the target
    is the ledger)."""
    return instrument_agents(
        target, session_id=session_id, metadata=metadata, max_scopes=max_scopes
    )
