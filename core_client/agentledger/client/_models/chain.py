"""The answer of ``verify_chain()``: whether an agent's hash chain is intact."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentledger.client._models._json import value_or

__all__ = ["ChainHead", "ChainProblem", "ChainReport"]


@dataclass(frozen=True, slots=True)
class ChainProblem:
    """One defect found by chain verification (``kind`` e.g. ``content_changed``,
    ``missing_or_reordered``, ``head_changed``); ``detail`` says what differs."""

    kind: str
    event_id: str | None
    sequence_no: int | None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ChainHead:
    """Last link of an agent's chain; save ``chain_hash`` as an anchor."""

    sequence_no: int
    chain_hash: str


@dataclass(frozen=True, slots=True)
class ChainReport:
    """``verify_chain()``: whether the agent's hash chain is intact (wire: ``/v1/events/chain``)."""

    intact: bool
    summary: str
    problems: list[ChainProblem]
    chain_head: ChainHead | None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_wire(cls, obj: dict[str, Any]) -> ChainReport:
        head = obj.get("chain_head")
        known = {"intact", "summary", "problems", "chain_head"}
        return cls(
            intact=bool(obj.get("intact", False)),
            summary=str(value_or(obj, "summary", "")),
            problems=[
                ChainProblem(
                    kind=str(p.get("kind", "")),
                    event_id=p.get("event_id"),
                    sequence_no=p.get("sequence_no"),
                    detail=str(p.get("detail") or ""),
                )
                for p in obj.get("problems") or []
                if isinstance(p, dict)
            ],
            chain_head=(
                ChainHead(
                    sequence_no=int(head.get("sequence_no") or 0),
                    chain_hash=str(head.get("chain_hash") or ""),
                )
                if isinstance(head, dict)
                else None
            ),
            extra={k: v for k, v in obj.items() if k not in known},
        )
