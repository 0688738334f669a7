"""State and plumbing shared by the callbacks of the LiveKit observer.

:class:`ObserverCore` holds the options and the per-session state, logs events, and tracks
speeches and their model requests (which event a speech's steps descend from, the open
``llm_start``, the pending ``llm_end``). The helpers below read LiveKit objects by public names.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal

from livekit.agents import get_job_context
from livekit.agents.version import __version__ as _LIVEKIT_VERSION

from agentledger.client import capture_internal_exceptions
from agentledger.integrations._shared import (
    InvalidOptionError,
    TimedLedgerLike,
    accepts_causes,
    accepts_keywords,
    max_scopes_option,
)
from agentledger.integrations.livekit._state import Call, Capped, Speech
from agentledger.integrations.livekit._values import (
    ms,
    request_messages,
    request_model,
    request_usage,
    utc,
)
from agentledger.protocol import vocabulary as v

__all__ = [
    "FRAMEWORK",
    "LEVELS",
    "MAX_CALLS",
    "MAX_SPEECHES",
    "Level",
    "ObserverCore",
    "callback",
    "current_agent",
    "current_job_id",
    "dump",
    "event_at",
    "model_of",
    "str_or_none",
]

Level = Literal["transcript", "standard", "verbose"]

#: Accepted ``level`` values, least to most detailed.
LEVELS: Final[tuple[str, ...]] = ("transcript", "standard", "verbose")

#: Live speeches and running tool calls kept at most by default (oldest dropped first).
MAX_SPEECHES: Final = 64
MAX_CALLS: Final = 1024

FRAMEWORK: Final = "livekit-agents"


class ObserverCore:
    """Options, per-session state and logging of an observer (no LiveKit callbacks here)."""

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
        # Ids chosen here let a tool call name the llm_end that asked for it before LiveKit
        # reports that request's end; a ledger without event_id= gets the llm_start instead.
        self._ids = accepts_keywords(ledger.log, "event_id")
        self._links = accepts_causes(ledger)
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
        self._last_response: str | None = None
        self._agent_step: str | None = None
        self._agent_name: str | None = None
        self._handed_off = False  # the current agent step was started by a handoff
        self._last_outcome: str | None = None
        self._user_spoke_at = 0.0
        self._resumed_at = 0.0
        self._handoff_cause: str | None = None
        self._transcript_meta: dict[str, Any] = {}
        self._usage: Any = None
        self._counts: Counter[str] = Counter()
        self._ended = False

    # -- logging -----------------------------------------------------------------------------

    def _log(
        self,
        event: str,
        data: dict[str, Any],
        parent: str | None,
        at: float | None = None,
        *,
        event_id: str | None = None,
        causes: Sequence[tuple[str | None, str]] = (),
        scope: str | None = None,
    ) -> str:
        """Log one event; ``causes`` are ``(event id, edge kind)`` (one naming ``parent``
        labels the parent edge), ``scope`` the enclosing step (dropped when it is the parent).
        """
        extra: dict[str, Any] = {}
        if event_id is not None and self._ids:
            extra["event_id"] = event_id
        if self._links:
            caused_by = [(cause, kind) for cause, kind in causes if cause is not None]
            if caused_by:
                extra["caused_by"] = caused_by
            if scope is not None and scope != parent:
                extra["scope_id"] = scope
        ref = self._ledger.log(
            event,
            data,
            session_id=self._session_id,
            parent_id=parent,
            metadata=self._metadata,
            timestamp=utc(at) if at is not None else None,
            **extra,
        )
        self._counts[event] += 1
        return ref.event_id

    def _start_data(self, session: Any) -> dict[str, Any]:
        model, provider = model_of(session)
        data: dict[str, Any] = {
            "framework": FRAMEWORK,
            "framework_version": _LIVEKIT_VERSION,
            "level": self._level,
            "model": model,
            "provider": provider,
        }
        job_id = current_job_id()
        if job_id is not None:
            data["job_id"] = job_id
        agent = current_agent(session)
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
                speech.anchor_is_user = True
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
            model, provider = model_of(self._session)
        data: dict[str, Any] = {"model": model, "provider": provider}
        parent = (speech.last_outcome if speech else None) or self._anchor(speech)
        if speech is not None and metrics is None:
            at = max(at, speech.boundary)  # never before the message it answers
        history = getattr(self._session, "history", None)
        items = getattr(history, "items", None)
        if items is not None:
            data["messages"] = request_messages(items, at)
        tools = agent_tool_names(self._session)
        if tools:
            data["tools"] = tools
        if speech is not None:
            data["speech_id"] = speech.speech_id
        if self._agent_name is not None:
            data["agent"] = self._agent_name
        start = self._log(
            v.LLM_START, data, parent, at, causes=self._read(speech, parent), scope=self._agent_step
        )
        if speech is not None:
            speech.open_start = start
            speech.open_end = str(uuid.uuid4()) if self._ids else None
            speech.open_calls = []
        return start

    def _read(self, speech: Speech | None, parent: str | None) -> list[tuple[str | None, str]]:
        """What a model request reads, new since the speech's previous one: the tool outcomes
        (else the user message it answers), and the handoff that made its agent current."""
        causes: list[tuple[str | None, str]] = []
        if speech is not None:
            inputs, speech.inputs = speech.inputs, []
            if inputs:
                causes = [(outcome, v.EDGE_READ) for outcome in inputs]
            elif speech.anchor_is_user and parent == speech.anchor:
                causes = [(parent, v.EDGE_READ)]
        if self._handed_off:
            causes.append((self._agent_step, v.EDGE_HANDOFF))
        return causes

    def _requester(self, speech: Speech | None, start: str) -> str:
        """The event a tool call of ``speech``'s open request names as its cause: the
        request's (reserved) ``llm_end``, else its ``llm_start``."""
        return (speech.open_end if speech is not None else None) or start

    def _flush_end(self, speech: Speech, *, text: str | None, final: bool = False) -> str | None:
        """Write ``llm_end`` for the speech's request in flight, if LiveKit reported it.

        ``final`` (the speech or session is over): also when LiveKit never reported it but
        tool calls already name its reserved id, so they never point at nothing.
        """
        metrics, start = speech.pending, speech.open_start
        named = final and speech.open_end is not None and bool(speech.open_calls)
        if start is None or (metrics is None and not named):
            return None
        end_at = float(getattr(metrics, "timestamp", 0.0) or 0.0) or None
        data: dict[str, Any] = {
            "text": text,
            "token_usage": request_usage(metrics),
            "tool_calls": list(speech.open_calls),
            "finish_reason": finish_reason(metrics, speech.open_calls),
            "ttft_ms": ms(getattr(metrics, "ttft", None)),
            "duration_ms": ms(getattr(metrics, "duration", None)),
            "request_id": getattr(metrics, "request_id", None) or None,
            "cancelled": bool(getattr(metrics, "cancelled", False)),
            "speech_id": speech.speech_id,
        }
        end = self._log(v.LLM_END, data, start, end_at, event_id=speech.open_end)
        speech.pending = None
        speech.open_start = speech.open_end = None
        speech.open_calls = []
        speech.last_step = end
        if end_at is not None:
            speech.boundary = max(speech.boundary, end_at)
        return end

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


def callback(where: str, body: Callable[[Any], None]) -> Callable[..., None]:
    """A plain sync LiveKit callback that accepts any arguments and never raises."""

    def handler(*args: Any, **kwargs: Any) -> None:
        with capture_internal_exceptions(where):
            body(args[0] if args else None)

    handler.__name__ = f"agentledger_{where.replace('.', '_')}"
    return handler


def event_at(ev: Any) -> float | None:
    created = getattr(ev, "created_at", None)
    return float(created) if isinstance(created, int | float) else None


def str_or_none(value: Any) -> str | None:
    return str(value) if value is not None else None


def dump(model: Any) -> dict[str, Any]:
    dump = model.model_dump(mode="json") if hasattr(model, "model_dump") else dict(vars(model))
    return dump if isinstance(dump, dict) else {"value": dump}


def finish_reason(metrics: Any, calls: list[dict[str, Any]]) -> str:
    if getattr(metrics, "cancelled", False):
        return "cancelled"
    return "tool_calls" if calls else "stop"


def current_job_id() -> str | None:
    ctx = get_job_context(required=False)
    job = getattr(ctx, "job", None) if ctx is not None else None
    job_id = getattr(job, "id", None)
    return job_id if isinstance(job_id, str) and job_id else None


def current_agent(session: Any) -> Any:
    try:
        return session.current_agent
    except RuntimeError:  # "VoiceAgent isn't running": attached before start()
        return None


def model_of(session: Any) -> tuple[str | None, str | None]:
    """``(model, provider)`` of the current agent's LLM, else the session's."""
    for owner in (current_agent(session), session):
        candidate = getattr(owner, "llm", None) if owner is not None else None
        model = getattr(candidate, "model", None)
        if isinstance(model, str):
            provider = getattr(candidate, "provider", None)
            return model, provider if isinstance(provider, str) else None
    return None, None


def agent_tool_names(session: Any) -> list[str]:
    """Names of the current agent's tools (a LiveKit tool names itself in ``info.name``)."""
    agent = current_agent(session)
    names: list[str] = []
    for tool in getattr(agent, "tools", None) or ():
        info = getattr(tool, "info", None)
        name = getattr(info, "name", None) or getattr(tool, "id", None)
        if isinstance(name, str):
            names.append(name)
    return names
