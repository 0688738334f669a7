"""The LiveKit session observer: one sync callback per ``AgentSession`` event, each logging
events that name their cause.

Conversation callbacks live in ``_turns``, tool callbacks in ``_tool_hooks``, state and
plumbing in ``_core``. Event table, link sources and guarantees:
``docs/design/integrations-livekit.md``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from livekit import rtc
from livekit.agents import AgentSession

from agentledger.client import capture_internal_exceptions
from agentledger.integrations._shared import AlreadyAttachedError
from agentledger.integrations.livekit._core import (
    FRAMEWORK,
    LEVELS,
    MAX_CALLS,
    MAX_SPEECHES,
    Level,
    callback,
    current_agent,
    current_job_id,
    event_at,
)
from agentledger.integrations.livekit._turns import TurnHooks
from agentledger.integrations.livekit._values import session_usage
from agentledger.protocol import vocabulary as v

__all__ = ["LEVELS", "MAX_CALLS", "MAX_SPEECHES", "LedgerSessionObserver", "Level"]


class LedgerSessionObserver(TurnHooks):
    """Log one LiveKit ``AgentSession`` as a causal event tree.

    Events and links: ``docs/design/integrations-livekit.md``.

    Args:
        ledger: an :class:`agentledger.client.Ledger` (anything with its non-blocking ``log``).
        session_id: ledger session id (str, <= 255 chars). Default: the LiveKit job id when
            attached inside a job (``get_job_context()``), else a new UUID4 hex per
            :meth:`attach` (one observer can be attached again after ``detach()``).
        level: ``"transcript"``, ``"standard"`` (default) or ``"verbose"``.
        metadata: a JSON object attached as ``metadata`` to every event.
        max_scopes: open scopes tracked at most per table: running tool calls and ended call
            ids (default :data:`MAX_CALLS`), live speeches (at most :data:`MAX_SPEECHES`).

    Raises:
        ValueError: unknown ``level`` or ``max_scopes`` below 1 (an ``InvalidOptionError``,
            also a :class:`~agentledger.protocol.LedgerError`).
    """

    # -- public surface ----------------------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        """The ledger session id (set by :meth:`attach`)."""
        return self._session_id

    @property
    def session_start_id(self) -> str | None:
        """Event id of this session's ``session_start`` (``None`` before :meth:`attach`)."""
        return self._session_start

    @property
    def level(self) -> Level:
        """The configured detail level."""
        return self._level

    def attach(self, session: AgentSession[Any]) -> LedgerSessionObserver:
        """Subscribe to ``session``'s events and log ``session_start``.

        Call it before ``session.start(...)`` to see the first agent and greeting; attaching
        later works, from the next event on.

        Args:
            session: a ``livekit.agents.AgentSession``.

        Returns:
            ``self``, so ``observer = LedgerSessionObserver(ledger).attach(session)`` works.

        Raises:
            RuntimeError: this observer is already attached to a session (an
                ``AlreadyAttachedError``, also a :class:`~agentledger.protocol.LedgerError`).
        """
        if self._session is not None:
            raise AlreadyAttachedError(
                "LedgerSessionObserver is already attached; detach() it first"
            )
        self._session = session
        self._reset()
        with capture_internal_exceptions("livekit.attach"):
            self._session_id = self._requested_session_id or current_job_id() or uuid.uuid4().hex
            self._session_start = self._log(v.SESSION_START, self._start_data(session), None)
            agent = current_agent(session)
            if agent is not None and self._rank >= 1:
                # Attached to a running session: its first agent's handoff event has passed.
                self._agent_name = getattr(agent, "id", None)
                data: dict[str, Any] = {"name": self._agent_name, "kind": "agent", "inputs": {}}
                self._agent_step = self._log(v.STEP_START, data, self._session_start)
        self._subscribe(session)
        return self

    def detach(self) -> None:
        """Unsubscribe from the session (idempotent). Logs nothing; ``close`` logs the end.

        Pending state (a model request waiting for its reply text) is written out first.
        """
        session, self._session = self._session, None
        if session is None:
            return
        with capture_internal_exceptions("livekit.detach"):
            for speech in list(self._speeches.values()):
                self._flush_end(speech, text=None, final=True)
                if speech.handle is not None:
                    speech.handle.remove_done_callback(self._speech_done_cb)
            self._speeches.clear()
            self._calls.clear()
            self._ended_calls.clear()
        for event, handler in self._handlers:
            with capture_internal_exceptions("livekit.detach"):
                session.off(event, handler)
        self._handlers.clear()

    # -- subscription ------------------------------------------------------------------------

    def _subscribe(self, session: Any) -> None:
        table: list[tuple[str, int, Callable[[Any], None]]] = [
            ("conversation_item_added", 0, self._on_item_added),
            ("user_input_transcribed", 0, self._on_transcribed),
            ("speech_created", 0, self._on_speech_created),
            ("close", 0, self._on_close),
            ("metrics_collected", 1, self._on_metrics),
            ("session_usage_updated", 1, self._on_usage),
            ("tool_execution_updated", 1, self._on_tool_update),
            ("function_tools_executed", 1, self._on_tools_executed),
            ("agent_false_interruption", 1, self._on_false_interruption),
            ("error", 1, self._on_error),
            ("agent_state_changed", 2, self._on_agent_state),
            ("user_state_changed", 1, self._on_user_state),
        ]
        for event, rank, body in table:
            if rank > self._rank:
                continue
            handler = callback(f"livekit.{event}", body)
            if event == "metrics_collected":
                # Deprecated event, still the only per-request source (see the design notes);
                # the base emitter skips the deprecation warning aimed at application code.
                rtc.EventEmitter.on(session, event, handler)
            else:
                session.on(event, handler)
            self._handlers.append((event, handler))

    # -- interruptions, errors, state, close -------------------------------------------------

    def _on_false_interruption(self, ev: Any) -> None:
        # The paused reply is the current speech; its own reply event does not exist yet.
        speech = self._owner(None)
        parent = (speech.last_step or speech.open_start) if speech is not None else None
        resumed = bool(getattr(ev, "resumed", False))
        data: dict[str, Any] = {"reason": "false_interruption", "resumed": resumed}
        at = event_at(ev)
        if speech is not None:
            data["speech_id"] = speech.speech_id
        if resumed:
            self._resumed_at = at or 0.0
        self._log(v.INTERRUPTED, data, parent or self._anchor(speech), at)

    def _on_error(self, ev: Any) -> None:
        err = getattr(ev, "error", None)
        inner = getattr(err, "error", err)
        data: dict[str, Any] = {
            "error": str(inner),
            "type": type(inner).__name__,
            "recoverable": getattr(err, "recoverable", None),
            "label": getattr(err, "label", None),
        }
        at = event_at(ev)
        if getattr(err, "type", None) == "llm_error":
            speech = self._owner(None)
            start = self._open_request(speech, speech.boundary if speech else (at or 0.0))
            # tool calls of the failed request name its reserved end: the error takes that id
            named = speech.open_end if speech is not None and speech.open_calls else None
            self._log(v.LLM_ERROR, data, start, at, event_id=named)
            if speech is not None:
                speech.open_start, speech.open_end, speech.pending = None, None, None
                speech.open_calls = []
            return
        name = getattr(err, "type", None) or type(err).__name__
        data.update(name=name, kind="agent")
        self._log(v.STEP_ERROR, data, self._agent_step or self._session_start, at)

    def _on_agent_state(self, ev: Any) -> None:
        self._state("agent_state", ev)

    def _on_user_state(self, ev: Any) -> None:
        if getattr(ev, "new_state", None) == "speaking":
            self._user_spoke_at = event_at(ev) or 0.0
        if self._rank >= 2:
            self._state("user_state", ev)

    def _state(self, key: str, ev: Any) -> None:
        data = {
            "key": key,
            "value": getattr(ev, "new_state", None),
            "old": getattr(ev, "old_state", None),
        }
        self._log(v.STATE_SET, data, self._session_start, event_at(ev))

    def _on_close(self, ev: Any) -> None:
        if self._ended:
            return
        self._ended = True
        at = event_at(ev)
        self._flush_calls(None, closing=True)
        for speech in list(self._speeches.values()):
            self._flush_end(speech, text=None, final=True)
        if self._agent_step is not None and self._rank >= 1:
            self._log(
                v.STEP_END,
                {"name": self._agent_name, "kind": "agent", "outputs": {}},
                self._agent_step,
                at,
            )
            self._agent_step = None
        reason = getattr(ev, "reason", None)
        error = getattr(ev, "error", None)
        usage = self._usage if self._usage is not None else getattr(self._session, "usage", None)
        data: dict[str, Any] = {
            "framework": FRAMEWORK,
            "reason": getattr(reason, "value", reason),
            "error": str(getattr(error, "error", error)) if error is not None else None,
            "usage": session_usage(usage) if usage is not None else None,
            "stats": {"events": dict(self._counts)},
        }
        self._log(v.SESSION_END, data, self._session_start, at)
        self.detach()
