"""``decision(event_id)``: the decision-time view of one event (``GET
/v1/events/{id}/decision``): state then, the model call behind it with its exact inputs, the
tool results it read and the human approvals of its turn."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentledger.client._models.events import Event
from agentledger.client._models.memory import StateAt

__all__ = ["Approval", "DecisionView", "ModelCall", "ModelInput"]


def _event(value: Any) -> Event | None:
    return Event.from_wire(value) if isinstance(value, dict) else None


def _objects(obj: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [x for x in obj.get(name) or () if isinstance(x, dict)]


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class ModelCall:
    """The model call behind the event: what its ``llm_start`` stored, exactly.

    ``messages`` are the messages (or prompts) the model received, ``invocation_params`` its
    parameters, ``prompt_hash`` the hash of its system prompt (a prompt version), ``versions``
    the prompt/config versions named in its metadata; ``start`` / ``end`` the ``llm_start`` and
    its ``llm_end`` (or ``llm_error``; ``None`` while it has not arrived)."""

    event_id: str
    start: Event
    found: str = ""
    model: str | None = None
    provider: str | None = None
    messages: Any = None
    system_prompt: str | None = None
    prompt_hash: str | None = None
    invocation_params: dict[str, Any] | None = None
    tools: list[Any] | None = None
    tool_result_ids: list[str] | None = None
    versions: dict[str, Any] = field(default_factory=dict)
    end: Event | None = None
    output: dict[str, Any] | None = None
    erased: bool = False

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> ModelCall:
        start = _event(obj.get("start"))
        return cls(
            event_id=str(obj.get("event_id", "")),
            start=start if start is not None else Event.from_wire({}),
            found=str(obj.get("found") or ""),
            model=obj.get("model") if isinstance(obj.get("model"), str) else None,
            provider=obj.get("provider") if isinstance(obj.get("provider"), str) else None,
            messages=obj.get("messages"),
            system_prompt=obj.get("system_prompt")
            if isinstance(obj.get("system_prompt"), str)
            else None,
            prompt_hash=obj.get("prompt_hash") if isinstance(obj.get("prompt_hash"), str) else None,
            invocation_params=obj.get("invocation_params")
            if isinstance(obj.get("invocation_params"), dict)
            else None,
            tools=list(obj["tools"]) if isinstance(obj.get("tools"), list) else None,
            tool_result_ids=list(obj["tool_result_ids"])
            if isinstance(obj.get("tool_result_ids"), list)
            else None,
            versions=_dict(obj.get("versions")),
            end=_event(obj.get("end")),
            output=dict(obj["output"]) if isinstance(obj.get("output"), dict) else None,
            erased=bool(obj.get("erased", False)),
        )


@dataclass(frozen=True, slots=True)
class ModelInput:
    """An input the model call read (a cause of its ``llm_start``): ``event`` is ``None`` when
    it is not stored (or not readable with this key); ``tool_call`` is the call behind a tool
    result."""

    event_id: str
    kind: str
    type: str | None = None
    tool: str | None = None
    call_id: str | None = None
    event: Event | None = None
    tool_call: Event | None = None

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> ModelInput:
        return cls(
            event_id=str(obj.get("event_id", "")),
            kind=str(obj.get("kind") or "cause"),
            type=obj.get("type") if isinstance(obj.get("type"), str) else None,
            tool=obj.get("tool") if isinstance(obj.get("tool"), str) else None,
            call_id=obj.get("call_id") if isinstance(obj.get("call_id"), str) else None,
            event=_event(obj.get("event")),
            tool_call=_event(obj.get("tool_call")),
        )


@dataclass(frozen=True, slots=True)
class Approval:
    """A human approval: the ``interrupted`` event (an ``interrupt()``), what it asked, the
    resuming ``user_message`` (``Command(resume=value)``), the value and who resumed
    (``None`` when nobody was recorded; ``resumed_by_source`` says where it was read)."""

    resume_id: str
    resume: Event
    value: Any = None
    resumed_by: str | None = None
    resumed_by_source: str | None = None
    interrupt_id: str | None = None
    interrupt: Event | None = None
    asked: Any = None
    timestamp: str | None = None

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> Approval:
        resume = _event(obj.get("resume"))
        who = obj.get("resumed_by")
        return cls(
            resume_id=str(obj.get("resume_id", "")),
            resume=resume if resume is not None else Event.from_wire({}),
            value=obj.get("value"),
            resumed_by=str(who) if who not in (None, "") else None,
            resumed_by_source=obj.get("resumed_by_source")
            if isinstance(obj.get("resumed_by_source"), str)
            else None,
            interrupt_id=obj.get("interrupt_id")
            if isinstance(obj.get("interrupt_id"), str)
            else None,
            interrupt=_event(obj.get("interrupt")),
            asked=obj.get("asked"),
            timestamp=obj.get("timestamp") if isinstance(obj.get("timestamp"), str) else None,
        )


@dataclass(frozen=True, slots=True)
class DecisionView:
    """The decision-time view of one event.

    ``model_call`` is ``None`` when no model call is behind the event (a user message, a
    step no model computed); ``notes`` say why. ``reads`` are the inputs that model call read,
    ``tool_results`` those of them that are tool outcomes; ``approvals`` the human approvals of
    the event's turn, oldest first (``approval``: the latest); ``state`` the agent's state at
    the event's time (as :meth:`at` gives it). ``lineage_complete`` is false when a cause was
    not stored, not readable with this key, or beyond the walk's bounds (``missing``)."""

    event_id: str
    event: Event
    agent: str
    timestamp: str
    state: StateAt
    session_id: str | None = None
    model_call: ModelCall | None = None
    reads: tuple[ModelInput, ...] = ()
    tool_results: tuple[ModelInput, ...] = ()
    approvals: tuple[Approval, ...] = ()
    notes: tuple[str, ...] = ()
    lineage_complete: bool = True
    missing: tuple[str, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def approval(self) -> Approval | None:
        """The latest human approval of the turn, or ``None``."""
        return self.approvals[-1] if self.approvals else None

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> DecisionView:
        event = _event(obj.get("event"))
        call = obj.get("model_call")
        lineage = _dict(obj.get("lineage"))
        return cls(
            event_id=str(obj.get("event_id", "")),
            event=event if event is not None else Event.from_wire({}),
            agent=str(obj.get("agent", "")),
            timestamp=str(obj.get("timestamp", "")),
            state=StateAt.from_wire(_dict(obj.get("state"))),
            session_id=obj.get("session_id") if isinstance(obj.get("session_id"), str) else None,
            model_call=ModelCall.from_wire(call) if isinstance(call, dict) else None,
            reads=tuple(ModelInput.from_wire(x) for x in _objects(obj, "reads")),
            tool_results=tuple(ModelInput.from_wire(x) for x in _objects(obj, "tool_results")),
            approvals=tuple(Approval.from_wire(x) for x in _objects(obj, "approvals")),
            notes=tuple(str(n) for n in obj.get("notes") or ()),
            lineage_complete=bool(lineage.get("complete", True)),
            missing=tuple(str(m) for m in lineage.get("missing") or ()),
            raw=dict(obj),
        )
