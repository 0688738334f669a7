"""The LiveKit session observer: one sync callback per ``AgentSession`` event, each logging
events that name their cause.

Event table, link sources and guarantees: ``docs/design/integrations-livekit.md``.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from livekit import rtc
from livekit.agents import AgentSession, get_job_context
from livekit.agents.version import __version__ as _LIVEKIT_VERSION

from agentledger.client import capture_internal_exceptions
from agentledger.integrations._shared import (
    AlreadyAttachedError,
    InvalidOptionError,
    TimedLedgerLike,
    max_scopes_option,
)
from agentledger.integrations.livekit._state import Call, Capped, Speech
from agentledger.integrations.livekit._values import (
    args_object,
    message_latency,
    ms,
    request_messages,
    request_model,
    request_usage,
    session_usage,
    text_of,
    utc,
)
from agentledger.protocol import vocabulary as v

__all__ = ["LEVELS", "MAX_CALLS", "MAX_SPEECHES", "LedgerSessionObserver", "Level"]

Level = Literal["transcript", "standard", "verbose"]

#: Accepted ``level`` values, least to most detailed.
LEVELS: Final[tuple[str, ...]] = ("transcript", "standard", "verbose")

#: Live speeches and running tool calls kept at most by default (oldest dropped first).
MAX_SPEECHES: Final = 64
MAX_CALLS: Final = 1024

_FRAMEWORK: Final = "livekit-agents"


class LedgerSessionObserver:
    """Log one LiveKit ``AgentSession`` as a causal event tree (see the module docstring).

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

    def __init__(
        self,
        ledger: TimedLedgerLike,
        *,
        session_id: str | None = None,
        level: Level = "standard",
        metadata: Mapping[str, Any] | None = None,
        max_scopes: int | None = None,
    ) -> None:
        if level not in LEVELS:
            raise InvalidOptionError(f"level must be one of {', '.join(LEVELS)}; got {level!r}")
        self._max_calls = max_scopes_option(max_scopes, default=MAX_CALLS)
        self._max_speeches = min(MAX_SPEECHES, self._max_calls)
        self._metadata = dict(metadata) if metadata else None
        self._ledger = ledger
        self._requested_session_id = session_id
        self._session_id: str | None = session_id
        self._level: Level = level
        self._rank = LEVELS.index(level)
        self._session: Any = None
        self._handlers: list[tuple[str, Callable[..., None]]] = []
        self._reset()

    def _reset(self) -> None:
        """Per-session state, fresh for every :meth:`attach`."""
        self._speeches: Capped[str, Speech] = Capped(self._max_speeches)
        self._calls: Capped[str, Call] = Capped(self._max_calls)
        self._ended_calls: Capped[str, str] = Capped(self._max_calls)
        self._last_speech: str | None = None
        self._session_start: str | None = None
        self._pending_user: str | None = None
        self._pending_user_at = 0.0
        self._last_user: str | None = None
        self._agent_step: str | None = None
        self._agent_name: str | None = None
        self._last_outcome: str | None = None
        self._user_spoke_at = 0.0
        self._resumed_at = 0.0
        self._handoff_cause: str | None = None
        self._transcript_meta: dict[str, Any] = {}
        self._usage: Any = None
        self._counts: Counter[str] = Counter()
        self._ended = False

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
            self._session_id = self._requested_session_id or _job_id() or uuid.uuid4().hex
            self._session_start = self._log(v.SESSION_START, self._start_data(session), None)
            agent = _current_agent(session)
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
                self._flush_end(speech, text=None)
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
            handler = _callback(f"livekit.{event}", body)
            if event == "metrics_collected":
                # Deprecated event, still the only per-request source (module docstring);
                # the base emitter skips the deprecation warning aimed at application code.
                rtc.EventEmitter.on(session, event, handler)
            else:
                session.on(event, handler)
            self._handlers.append((event, handler))

    # -- logging -----------------------------------------------------------------------------

    def _log(
        self,
        event: str,
        data: dict[str, Any],
        parent: str | None,
        at: float | None = None,
    ) -> str:
        ref = self._ledger.log(
            event,
            data,
            session_id=self._session_id,
            parent_id=parent,
            metadata=self._metadata,
            timestamp=utc(at) if at is not None else None,
        )
        self._counts[event] += 1
        return ref.event_id

    def _start_data(self, session: Any) -> dict[str, Any]:
        model, provider = _model_of(session)
        data: dict[str, Any] = {
            "framework": _FRAMEWORK,
            "framework_version": _LIVEKIT_VERSION,
            "level": self._level,
            "model": model,
            "provider": provider,
        }
        job_id = _job_id()
        if job_id is not None:
            data["job_id"] = job_id
        agent = _current_agent(session)
        if agent is not None:
            data["agent"] = getattr(agent, "id", None)
        return data

    # -- speeches ----------------------------------------------------------------------------

    def _speech(self, speech_id: str | None) -> Speech | None:
        """The state of ``speech_id``, created on first sight (a speech begun before attach)."""
        if not speech_id:
            return None
        speech = self._speeches.get(speech_id)
        if speech is None:
            speech = Speech(speech_id=speech_id)
            self._speeches[speech_id] = speech
        self._last_speech = speech_id
        return speech

    def _owner(self, item_id: str | None) -> Speech | None:
        """The live speech whose ``chat_items`` hold ``item_id``, else the current speech."""
        if item_id:
            for speech in reversed(self._speeches.values()):
                items = getattr(speech.handle, "chat_items", None) or ()
                if any(getattr(item, "id", None) == item_id for item in items):
                    self._last_speech = speech.speech_id
                    return speech
        current = getattr(self._session, "current_speech", None)
        if current is not None:
            return self._speech(getattr(current, "id", None))
        return self._speeches.get(self._last_speech) if self._last_speech else None

    def _anchor(self, speech: Speech | None) -> str | None:
        """The event a speech's steps descend from; bound at its first step.

        The speech answers the latest user message nobody answered yet; a speech with no such
        message (a greeting, a reply after a handoff) descends from the agent step.
        """
        if speech is None:
            return self._pending_user or self._last_user or self._agent_step or self._session_start
        if speech.anchor is None:
            if self._pending_user is not None:
                speech.anchor, self._pending_user = self._pending_user, None
                speech.boundary = max(speech.boundary, self._pending_user_at)
            else:
                speech.anchor = self._agent_step or self._session_start
        return speech.anchor

    def _open_request(self, speech: Speech | None, at: float, metrics: Any = None) -> str:
        """The ``llm_start`` id of ``speech``'s request in flight, logging it if needed."""
        if speech is not None and speech.open_start is not None:
            return speech.open_start
        model, provider = request_model(metrics) if metrics is not None else (None, None)
        if model is None:
            model, provider = _model_of(self._session)
        data: dict[str, Any] = {"model": model, "provider": provider}
        parent = (speech.last_outcome if speech else None) or self._anchor(speech)
        if speech is not None and metrics is None:
            at = max(at, speech.boundary)  # never before the message it answers
        history = getattr(self._session, "history", None)
        items = getattr(history, "items", None)
        if items is not None:
            data["messages"] = request_messages(items, at)
        tools = _agent_tool_names(self._session)
        if tools:
            data["tools"] = tools
        if speech is not None:
            data["speech_id"] = speech.speech_id
        start = self._log(v.LLM_START, data, parent, at)
        if speech is not None:
            speech.open_start = start
            speech.open_calls = []
        return start

    def _flush_end(self, speech: Speech, *, text: str | None) -> str | None:
        """Write ``llm_end`` for the speech's request in flight, if LiveKit reported it."""
        metrics, start = speech.pending, speech.open_start
        if metrics is None or start is None:
            return None
        end_at = float(getattr(metrics, "timestamp", 0.0) or 0.0) or None
        data: dict[str, Any] = {
            "text": text,
            "token_usage": request_usage(metrics),
            "tool_calls": list(speech.open_calls),
            "finish_reason": _finish_reason(metrics, speech.open_calls),
            "ttft_ms": ms(getattr(metrics, "ttft", None)),
            "duration_ms": ms(getattr(metrics, "duration", None)),
            "request_id": getattr(metrics, "request_id", None) or None,
            "cancelled": bool(getattr(metrics, "cancelled", False)),
            "speech_id": speech.speech_id,
        }
        end = self._log(v.LLM_END, data, start, end_at)
        speech.pending = None
        speech.open_start = None
        speech.open_calls = []
        speech.last_step = end
        if end_at is not None:
            speech.boundary = max(speech.boundary, end_at)
        return end

    # -- conversation items ------------------------------------------------------------------

    def _on_item_added(self, ev: Any) -> None:
        # Events are stamped with the time the item was added (``ev.created_at``), not the
        # item's own ``created_at`` (for a reply: when speaking started, before its llm_end).
        item = getattr(ev, "item", None)
        at = _at(ev)
        kind = getattr(item, "type", None)
        if kind == "agent_handoff":
            if self._rank >= 1:
                self._on_handoff(item, at)
            return
        if kind != "message":
            return
        role = getattr(item, "role", None)
        if role == "user":
            self._on_user_message(item, at)
        elif role == "assistant":
            self._on_assistant_message(item, at)

    def _on_user_message(self, item: Any, at: float | None) -> None:
        text = text_of(item)
        data: dict[str, Any] = {"text": text, "role": "user", "item_id": getattr(item, "id", None)}
        meta, self._transcript_meta = self._transcript_meta, {}
        if meta and (not meta.get("text") or meta["text"] in text):
            for key in ("language", "speaker_id"):
                if meta.get(key) is not None:
                    data[key] = meta[key]
        if getattr(item, "interrupted", False):
            data["interrupted"] = True
        confidence = getattr(item, "transcript_confidence", None)
        if confidence is not None:
            data["transcript_confidence"] = confidence
        latency = message_latency(getattr(item, "metrics", None))
        if latency:
            data["latency"] = latency
        event_id = self._log(v.USER_MESSAGE, data, self._session_start, at)
        self._pending_user = self._last_user = event_id
        self._pending_user_at = at or 0.0

    def _on_assistant_message(self, item: Any, at: float | None) -> None:
        item_id = getattr(item, "id", None)
        text = text_of(item)
        interrupted = bool(getattr(item, "interrupted", False))
        speech = self._owner(item_id) if self._rank >= 1 else None
        if speech is not None:
            # A cut-off reply's text is what was spoken, not what the model produced.
            self._flush_end(speech, text=None if interrupted else text)
            parent = speech.last_step or speech.open_start or self._anchor(speech)
        else:
            parent = self._last_user or self._agent_step or self._session_start
        data: dict[str, Any] = {"text": text, "interrupted": interrupted, "item_id": item_id}
        if speech is not None:
            data["speech_id"] = speech.speech_id
        metrics = getattr(item, "metrics", None)
        latency = message_latency(metrics)
        if latency:
            data["latency"] = latency
        if self._rank >= 2 and metrics:
            data["metrics"] = dict(metrics)
        response = self._log(v.ASSISTANT_RESPONSE, data, parent, at)
        if speech is not None:
            speech.last_step = response
        if interrupted and self._rank >= 1:
            self._log_interrupted(speech, response, at)

    def _log_interrupted(
        self, speech: Speech | None, parent: str | None, at: float | None = None
    ) -> None:
        """``interrupted``: ``barge_in`` when the user started speaking during the speech
        (and LiveKit did not resume it as a false interruption since), else ``interrupted``
        (``session.interrupt()``, a tool, a handoff, shutdown)."""
        spoke = self._user_spoke_at
        barge_in = (
            speech is not None and spoke >= speech.created_at > 0 and spoke > self._resumed_at
        )
        data: dict[str, Any] = {"reason": "barge_in" if barge_in else "interrupted"}
        if speech is not None:
            data["speech_id"] = speech.speech_id
            speech.interrupted_logged = True
        self._log(v.INTERRUPTED, data, parent, at)

    def _on_handoff(self, item: Any, at: float | None) -> None:
        old, new = getattr(item, "old_agent_id", None), getattr(item, "new_agent_id", None)
        if self._agent_step is not None:
            self._log(
                v.STEP_END,
                {"name": self._agent_name, "kind": "agent", "outputs": {"handoff_to": new}},
                self._agent_step,
                at,
            )
        # The tool whose result handed off (function_tools_executed.has_agent_handoff).
        cause, self._handoff_cause = self._handoff_cause, None
        data: dict[str, Any] = {"name": new, "kind": "agent", "inputs": {"handoff_from": old}}
        instructions = getattr(_current_agent(self._session), "instructions", None)
        if isinstance(instructions, str):
            data["inputs"]["instructions"] = instructions
        self._agent_step = self._log(v.STEP_START, data, cause or self._session_start, at)
        self._agent_name = new

    def _on_transcribed(self, ev: Any) -> None:
        text = getattr(ev, "transcript", "")
        if getattr(ev, "is_final", False):
            self._transcript_meta = {
                "text": text.strip(),
                "language": _str_or_none(getattr(ev, "language", None)),
                "speaker_id": getattr(ev, "speaker_id", None),
            }
        elif self._rank >= 2:
            data = {
                "text": text,
                "item_id": getattr(ev, "item_id", None),
                "language": _str_or_none(getattr(ev, "language", None)),
                "speaker_id": getattr(ev, "speaker_id", None),
            }
            self._log("livekit.transcript_partial", data, self._session_start, _at(ev))

    # -- speeches and model requests ---------------------------------------------------------

    def _on_speech_created(self, ev: Any) -> None:
        handle = getattr(ev, "speech_handle", None)
        speech_id = getattr(handle, "id", None)
        if handle is None or not speech_id:
            return
        at = _at(ev) or 0.0
        self._speeches[speech_id] = Speech(
            speech_id=speech_id, handle=handle, created_at=at, boundary=at
        )
        self._last_speech = speech_id
        handle.add_done_callback(self._speech_done_cb)

    def _speech_done_cb(self, *args: Any, **kwargs: Any) -> None:
        with capture_internal_exceptions("livekit.speech_done"):
            handle = args[0] if args else None
            speech = self._speeches.pop(getattr(handle, "id", ""), None)
            if speech is None:
                return
            self._flush_calls(speech.speech_id)
            self._flush_end(speech, text=None)
            if (
                self._rank >= 1
                and getattr(handle, "interrupted", False)
                and not speech.interrupted_logged
            ):
                self._log_interrupted(speech, speech.last_step or speech.anchor)

    def _on_metrics(self, ev: Any) -> None:
        metrics = getattr(ev, "metrics", None)
        if getattr(metrics, "type", None) == "llm_metrics":
            self._on_llm_metrics(metrics)
        if self._rank >= 2 and metrics is not None:
            speech = self._speeches.get(getattr(metrics, "speech_id", None) or "")
            parent = speech.anchor if speech is not None else None
            self._log("livekit.metrics", _dump(metrics), parent or self._session_start, _at(ev))

    def _on_llm_metrics(self, metrics: Any) -> None:
        speech = self._speech(getattr(metrics, "speech_id", None))
        end_at = float(getattr(metrics, "timestamp", 0.0) or 0.0)
        duration = getattr(metrics, "duration", None)
        started = end_at - duration if isinstance(duration, int | float) else end_at
        if speech is None:
            # A request outside any speech (e.g. a user's own llm.chat()): log it whole.
            start = self._open_request(None, started, metrics)
            orphan = Speech(speech_id="", open_start=start, pending=metrics)
            self._flush_end(orphan, text=None)
            return
        if speech.pending is not None:
            self._flush_end(speech, text=None)
        self._open_request(speech, started, metrics)
        speech.pending = metrics

    def _on_usage(self, ev: Any) -> None:
        self._usage = getattr(ev, "usage", None)

    # -- tools -------------------------------------------------------------------------------

    def _on_tool_update(self, ev: Any) -> None:
        update = getattr(ev, "update", None)
        kind = getattr(update, "type", None)
        at = _at(ev)
        if kind == "tool_call_started":
            self._tool_started(getattr(update, "function_call", None), at)
        elif kind == "tool_call_ended":
            call_id = getattr(update, "call_id", None) or ""
            call = self._calls.get(call_id)
            if call is None or call.status is not None:
                return
            call.status = getattr(update, "status", None) or "done"
            call.message = getattr(update, "message", None)
            call.ended_at = at
            if call.batch_done:
                self._log_outcome(call_id, call, None)
        elif kind == "tool_call_updated" and self._rank >= 2:
            call = self._calls.get(getattr(update, "call_id", None) or "")
            data = {
                "call_id": getattr(update, "call_id", None),
                "message": getattr(update, "message", None),
                "silent": getattr(update, "silent", None),
            }
            self._log("livekit.tool_update", data, call.event_id if call else None, at)

    def _tool_started(self, fnc_call: Any, at: float | None) -> Call | None:
        call_id = getattr(fnc_call, "call_id", None)
        if fnc_call is None or not call_id:
            return None
        if call_id in self._calls or call_id in self._ended_calls:
            return self._calls.get(call_id)
        speech = self._owner(getattr(fnc_call, "id", None))
        now = at or 0.0
        start = self._open_request(speech, speech.boundary if speech else now)
        name = getattr(fnc_call, "name", "")
        args = args_object(getattr(fnc_call, "arguments", None))
        data: dict[str, Any] = {"tool": name, "args": args, "call_id": call_id}
        if getattr(fnc_call, "group_id", None):
            data["group_id"] = fnc_call.group_id
        if speech is not None:
            data["speech_id"] = speech.speech_id
            speech.open_calls.append({"tool": name, "args": args, "call_id": call_id})
        event_id = self._log(v.TOOL_CALL, data, start, at)
        call = Call(event_id, name, now, speech.speech_id if speech else None)
        self._calls[call_id] = call
        return call

    def _log_outcome(self, call_id: str, call: Call, output: Any) -> str:
        """Write ``tool_result`` / ``tool_error`` of an ended call (child of its ``tool_call``).

        Args:
            output: the batch's ``FunctionCallOutput`` (what the model was given), or ``None``.
        """
        self._calls.pop(call_id, None)
        given = getattr(output, "output", None) if output is not None else None
        data: dict[str, Any] = {"tool": call.tool, "call_id": call_id}
        if call.ended_at is not None and call.started_at:
            data["duration_ms"] = ms(call.ended_at - call.started_at)
        if call.status == "done":
            # The model-facing output (a handoff tool's ``(Agent, "text")`` becomes "text").
            data.update(result=given if output is not None else call.message, status="done")
            event = v.TOOL_RESULT
        else:
            # LiveKit reports the exception's text, not its class, so ``type`` is unknown
            # (None) for a raising tool; "cancelled" for a cancelled call (e.g. a barge-in),
            # "unfinished" for a call still running when the session closed.
            error = call.message if call.message is not None else call.status
            data.update(error=error, type=None if call.status == "error" else call.status)
            data["status"] = call.status
            if given is not None and given != error:
                data["model_output"] = given
            event = v.TOOL_ERROR
        outcome = self._log(event, data, call.event_id, call.ended_at)
        self._ended_calls[call_id] = outcome
        self._last_outcome = outcome
        speech = self._speeches.get(call.speech_id or "")
        if speech is not None:
            speech.last_outcome = speech.last_step = outcome
            if call.ended_at is not None:
                speech.boundary = max(speech.boundary, call.ended_at)
        return outcome

    def _flush_calls(self, speech_id: str | None, *, closing: bool = False) -> None:
        """Write the outcomes of ended calls of a finished speech (all speeches if ``None``)."""
        for call_id, call in list(self._calls.items()):
            if speech_id is not None and call.speech_id != speech_id:
                continue
            call.batch_done = True
            if call.status is None and closing:
                call.status, call.message = "unfinished", "session closed while the tool ran"
            if call.status is not None:
                self._log_outcome(call_id, call, None)

    def _on_tools_executed(self, ev: Any) -> None:
        at = _at(ev)
        speech: Speech | None = None
        self._last_outcome = None
        for fnc_call, output in zip(
            getattr(ev, "function_calls", None) or (),
            getattr(ev, "function_call_outputs", None) or (),
            strict=False,
        ):
            call_id = getattr(fnc_call, "call_id", None) or ""
            speech = speech or self._owner(getattr(fnc_call, "id", None))
            call = self._calls.get(call_id)
            if call is None and call_id not in self._ended_calls:
                # LiveKit never started it (arguments failed to parse): log call + outcome.
                call = self._tool_started(fnc_call, at)
                if call is not None:
                    call.status = "error" if getattr(output, "is_error", False) else "done"
                    call.message, call.ended_at = getattr(output, "output", None), at
            if call is None:
                continue
            call.batch_done = True
            if call.status is not None:
                self._log_outcome(call_id, call, output)
        if getattr(ev, "has_agent_handoff", False):
            self._handoff_cause = self._last_outcome
        if speech is not None:
            self._flush_end(speech, text=None)
            if at is not None:
                speech.boundary = max(speech.boundary, at)

    # -- interruptions, errors, state, close -------------------------------------------------

    def _on_false_interruption(self, ev: Any) -> None:
        # The paused reply is the current speech; its own reply event does not exist yet.
        speech = self._owner(None)
        parent = (speech.last_step or speech.open_start) if speech is not None else None
        resumed = bool(getattr(ev, "resumed", False))
        data: dict[str, Any] = {"reason": "false_interruption", "resumed": resumed}
        at = _at(ev)
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
        at = _at(ev)
        if getattr(err, "type", None) == "llm_error":
            speech = self._owner(None)
            start = self._open_request(speech, speech.boundary if speech else (at or 0.0))
            self._log(v.LLM_ERROR, data, start, at)
            if speech is not None:
                speech.open_start, speech.pending, speech.open_calls = None, None, []
            return
        name = getattr(err, "type", None) or type(err).__name__
        data.update(name=name, kind="agent")
        self._log(v.STEP_ERROR, data, self._agent_step or self._session_start, at)

    def _on_agent_state(self, ev: Any) -> None:
        self._state("agent_state", ev)

    def _on_user_state(self, ev: Any) -> None:
        if getattr(ev, "new_state", None) == "speaking":
            self._user_spoke_at = _at(ev) or 0.0
        if self._rank >= 2:
            self._state("user_state", ev)

    def _state(self, key: str, ev: Any) -> None:
        data = {
            "key": key,
            "value": getattr(ev, "new_state", None),
            "old": getattr(ev, "old_state", None),
        }
        self._log(v.STATE_SET, data, self._session_start, _at(ev))

    def _on_close(self, ev: Any) -> None:
        if self._ended:
            return
        self._ended = True
        at = _at(ev)
        self._flush_calls(None, closing=True)
        for speech in list(self._speeches.values()):
            self._flush_end(speech, text=None)
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
            "framework": _FRAMEWORK,
            "reason": getattr(reason, "value", reason),
            "error": str(getattr(error, "error", error)) if error is not None else None,
            "usage": session_usage(usage) if usage is not None else None,
            "stats": {"events": dict(self._counts)},
        }
        self._log(v.SESSION_END, data, self._session_start, at)
        self.detach()


def _callback(where: str, body: Callable[[Any], None]) -> Callable[..., None]:
    """A plain sync LiveKit callback that accepts any arguments and never raises."""

    def handler(*args: Any, **kwargs: Any) -> None:
        with capture_internal_exceptions(where):
            body(args[0] if args else None)

    handler.__name__ = f"agentledger_{where.replace('.', '_')}"
    return handler


def _at(ev: Any) -> float | None:
    created = getattr(ev, "created_at", None)
    return float(created) if isinstance(created, int | float) else None


def _str_or_none(value: Any) -> str | None:
    return str(value) if value is not None else None


def _dump(model: Any) -> dict[str, Any]:
    dump = model.model_dump(mode="json") if hasattr(model, "model_dump") else dict(vars(model))
    return dump if isinstance(dump, dict) else {"value": dump}


def _finish_reason(metrics: Any, calls: list[dict[str, Any]]) -> str:
    if getattr(metrics, "cancelled", False):
        return "cancelled"
    return "tool_calls" if calls else "stop"


def _job_id() -> str | None:
    ctx = get_job_context(required=False)
    job = getattr(ctx, "job", None) if ctx is not None else None
    job_id = getattr(job, "id", None)
    return job_id if isinstance(job_id, str) and job_id else None


def _current_agent(session: Any) -> Any:
    try:
        return session.current_agent
    except RuntimeError:  # "VoiceAgent isn't running": attached before start()
        return None


def _model_of(session: Any) -> tuple[str | None, str | None]:
    """``(model, provider)`` of the current agent's LLM, else the session's."""
    for owner in (_current_agent(session), session):
        candidate = getattr(owner, "llm", None) if owner is not None else None
        model = getattr(candidate, "model", None)
        if isinstance(model, str):
            provider = getattr(candidate, "provider", None)
            return model, provider if isinstance(provider, str) else None
    return None, None


def _agent_tool_names(session: Any) -> list[str]:
    """Names of the current agent's tools (a LiveKit tool names itself in ``info.name``)."""
    agent = _current_agent(session)
    names: list[str] = []
    for tool in getattr(agent, "tools", None) or ():
        info = getattr(tool, "info", None)
        name = getattr(info, "name", None) or getattr(tool, "id", None)
        if isinstance(name, str):
            names.append(name)
    return names
