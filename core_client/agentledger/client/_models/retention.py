"""Answers of the retention methods (``retention_policies()``, ``set_retention()``,
``run_retention()``, ``retention_log()``; wire: ``/v1/retention``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["RetentionEntry", "RetentionPolicies", "RetentionPolicy", "RetentionRun"]


def _optional_str(obj: dict[str, Any], name: str) -> str | None:
    value = obj.get(name)
    return None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """How long an agent's event content is kept; ``agent`` is ``None`` for the default."""

    agent: str | None
    keep: str
    keep_seconds: int
    updated_at: str | None = None

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> RetentionPolicy:
        return cls(
            agent=_optional_str(obj, "agent"),
            keep=str(obj.get("keep", "")),
            keep_seconds=int(obj.get("keep_seconds") or 0),
            updated_at=_optional_str(obj, "updated_at"),
        )


@dataclass(frozen=True, slots=True)
class RetentionPolicies:
    """The default policy (``None`` when unset) and every per-agent policy, by agent."""

    default: RetentionPolicy | None
    policies: list[RetentionPolicy] = field(default_factory=list)

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> RetentionPolicies:
        default = obj.get("default")
        return cls(
            default=RetentionPolicy.from_wire(default) if isinstance(default, dict) else None,
            policies=[
                RetentionPolicy.from_wire(p)
                for p in obj.get("policies") or []
                if isinstance(p, dict)
            ],
        )


@dataclass(frozen=True, slots=True)
class RetentionEntry:
    """One agent's part of a sweep: by which rule and window, how many events were (or, in a
    dry run, would be) erased, their oldest and newest time and their sessions. Entries of
    the erasure log also carry the sweep's ``run_id``, times and ``trigger``."""

    agent: str
    rule: str
    keep: str
    erased: int
    cutoff: str | None = None
    oldest: str | None = None
    newest: str | None = None
    sessions: list[str] = field(default_factory=list)
    run_id: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    trigger: str | None = None

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> RetentionEntry:
        return cls(
            agent=str(obj.get("agent", "")),
            rule=str(obj.get("rule", "")),
            keep=str(obj.get("keep", "")),
            erased=int(obj.get("erased") or 0),
            cutoff=_optional_str(obj, "cutoff"),
            oldest=_optional_str(obj, "oldest"),
            newest=_optional_str(obj, "newest"),
            sessions=[str(s) for s in obj.get("sessions") or []],
            run_id=_optional_str(obj, "run_id"),
            started_at=_optional_str(obj, "started_at"),
            finished_at=_optional_str(obj, "finished_at"),
            trigger=_optional_str(obj, "trigger"),
        )


@dataclass(frozen=True, slots=True)
class RetentionRun:
    """A sweep run on request: ``run_id`` is ``None`` for a dry run; ``yielded`` is true when
    another server process held the sweep and this one stopped early (PostgreSQL)."""

    dry_run: bool
    erased: int
    message: str
    agents: list[RetentionEntry] = field(default_factory=list)
    run_id: str | None = None
    yielded: bool = False

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> RetentionRun:
        return cls(
            dry_run=bool(obj.get("dry_run")),
            erased=int(obj.get("erased") or 0),
            message=str(obj.get("message", "")),
            agents=[
                RetentionEntry.from_wire(e) for e in obj.get("agents") or [] if isinstance(e, dict)
            ],
            run_id=_optional_str(obj, "run_id"),
            yielded=bool(obj.get("yielded")),
        )
