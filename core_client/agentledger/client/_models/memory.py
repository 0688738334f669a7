"""Answers of the memory and behaviour reads: ``at()``, ``context_for()``, ``memory_diff()``,
``baseline()`` / ``behavior_change()`` and ``forget()``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentledger.client._models._json import value_or

__all__ = ["BaselineReport", "ForgetResult", "MemoryContext", "SessionDiff", "StateAt"]


@dataclass(frozen=True, slots=True)
class StateAt:
    """``at(timestamp)``: the agent's key/value state at a time (``state_set``/``state_delete``).

    ``model_call`` is the agent's last model call at or before the time (``event_id``,
    ``session_id``, ``timestamp``, ``model``, ``prompt_hash``): the prompt version and model in
    effect then; ``None`` when there was none (or the server predates it).
    """

    agent: str
    at: str
    event_count: int
    truncated: bool
    state: dict[str, Any]
    model_call: dict[str, Any] | None = None

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> StateAt:
        return cls(
            agent=str(obj.get("agent", "")),
            at=str(obj.get("at", "")),
            event_count=int(value_or(obj, "event_count", 0)),
            truncated=bool(obj.get("truncated", False)),
            state=dict(value_or(obj, "state", {})),
            model_call=dict(obj["model_call"]) if isinstance(obj.get("model_call"), dict) else None,
        )


@dataclass(frozen=True, slots=True)
class MemoryContext:
    """``context_for(task)``: a prompt-ready memory block under a token budget.

    ``context`` is the packed text; ``token_count`` its size in tokens as counted by
    ``tokenizer`` (tiktoken's name when the server has it, else ``"estimate"``: chars / 4);
    ``sources`` the events it came from (``{"event_id", "kind": "recent"|"relevant", ...}``).
    """

    agent: str
    task: str
    context: str
    token_count: int
    max_tokens: int
    tokenizer: str
    truncated: bool
    search_mode: str
    sources: list[dict[str, Any]]

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> MemoryContext:
        return cls(
            agent=str(obj.get("agent", "")),
            task=str(obj.get("task", "")),
            context=str(obj.get("context", "")),
            token_count=int(value_or(obj, "token_count", 0)),
            max_tokens=int(value_or(obj, "max_tokens", 0)),
            tokenizer=str(obj.get("tokenizer", "")),
            truncated=bool(obj.get("truncated", False)),
            search_mode=str(obj.get("search_mode", "")),
            sources=list(value_or(obj, "sources", [])),
        )


@dataclass(frozen=True, slots=True)
class SessionDiff:
    """``memory_diff(session_id)``: one session next to the agent's usual sessions.

    ``raw`` keeps the whole answer (``compared_to``, ``top_events``...); the common members
    are lifted out. ``duration_s`` is in seconds.
    """

    session_id: str
    agent: str
    summary: str
    event_count: int
    causal_depth: int
    duration_s: float
    has_errors: bool
    new_event_types: list[Any]
    new_steps: list[Any]
    missing_steps: list[Any]
    raw: dict[str, Any]

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> SessionDiff:
        return cls(
            session_id=str(obj.get("session_id", "")),
            agent=str(obj.get("agent", "")),
            summary=str(obj.get("summary", "")),
            event_count=int(value_or(obj, "event_count", 0)),
            causal_depth=int(value_or(obj, "causal_depth", 0)),
            duration_s=float(value_or(obj, "duration_s", 0.0)),
            has_errors=bool(obj.get("has_errors", False)),
            new_event_types=list(value_or(obj, "new_event_types", [])),
            new_steps=list(value_or(obj, "new_steps", [])),
            missing_steps=list(value_or(obj, "missing_steps", [])),
            raw=dict(obj),
        )


@dataclass(frozen=True, slots=True)
class BaselineReport:
    """``baseline()`` / ``behavior_change()``: drift of an agent's behaviour.

    ``raw`` keeps the whole answer (distributions); the common members are lifted out.
    """

    agent: str
    drift_score: float | None
    verdict: str | None
    raw: dict[str, Any]

    @classmethod
    def from_wire(cls, agent: str, obj: dict[str, Any]) -> BaselineReport:
        score = obj.get("drift_score")
        return cls(
            agent=str(obj.get("agent", agent)),
            drift_score=float(score) if isinstance(score, int | float) else None,
            verdict=obj.get("verdict"),
            raw=obj,
        )


@dataclass(frozen=True, slots=True)
class ForgetResult:
    """``forget()``: how many events were erased (tombstones keep the chain verifiable), where
    the value matched (``matched_in``: events per part, ``data`` and ``metadata``), and the
    sessions renamed because their id named the value (pseudonyms; ``events_amended`` kept
    events rewritten with them).

    ``raw`` keeps the whole answer as it came (fields the server adds too)."""

    deleted_events: int
    filter: dict[str, Any]
    event_ids: list[str] = field(default_factory=list)
    dry_run: bool = False
    matched_in: dict[str, int] = field(default_factory=dict)
    sessions_renamed: list[str] = field(default_factory=list)
    events_amended: int = 0
    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> ForgetResult:
        return cls(
            deleted_events=int(value_or(obj, "deleted_events", 0)),
            filter=dict(value_or(obj, "filter", {})),
            event_ids=[str(x) for x in value_or(obj, "event_ids", [])],
            dry_run=bool(obj.get("dry_run", False)),
            matched_in={str(k): int(v) for k, v in dict(value_or(obj, "matched_in", {})).items()},
            sessions_renamed=[str(x) for x in value_or(obj, "sessions_renamed", [])],
            events_amended=int(value_or(obj, "events_amended", 0)),
            raw=dict(obj),
        )
