"""What an evidence bundle is made of, read from the store: the event's causal ancestry (why)
and impact, and per agent of those events the contiguous chain segment from the earliest
needed record up to a signed head (a stored one by the active key when it covers them, else
one signed now), with the earlier signed heads inside the segment. Design:
``docs/design/evidence.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson
from sqlalchemy import select

from agentledger.protocol import limits
from agentledger.protocol.errors import LedgerError
from agentledger.server._chain import ChainRow
from agentledger.server._query.decision import decision_view
from agentledger.server._signing._heads import HeadSigner, _row_head
from agentledger.server._store._sql import SQLStore
from agentledger.server._tables import signed_heads

__all__ = ["BundleMaterial", "BundleTooLarge", "Segment", "gather_material"]

#: Earlier signed heads carried per segment (anchors of records before an erased event).
MAX_ANCHORS = 1000


@dataclass
class Segment:
    """One agent's rows ``first_seq .. head["sequence_no"]`` and the head that covers them."""

    agent: str
    first_seq: int
    previous_hash: str | None
    head: dict[str, Any]
    anchors: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    #: the head was signed for this bundle (no stored head by the active key covered it)
    signed_now: bool


@dataclass
class BundleMaterial:
    """Everything a bundle states, before it is written out."""

    event_id: str
    agent: str
    event: dict[str, Any]
    why: dict[str, Any]
    impact: dict[str, Any]
    edges: list[dict[str, str]]
    events: list[dict[str, Any]]
    segments: list[Segment] = field(default_factory=list)
    #: the decision-time view (``GET /v1/events/{id}/decision``) of the event
    decision: dict[str, Any] | None = None


def _wire(events: list[Any]) -> list[dict[str, Any]]:
    parsed: list[dict[str, Any]] = orjson.loads(orjson.dumps(events))
    return parsed


def _row(store: SQLStore, row: ChainRow) -> dict[str, Any]:
    out: dict[str, Any] = {
        "sequence_no": row.sequence_no,
        "event_id": row.event_id,
        "timestamp": row.timestamp,
        "event": row.event,
        "parent_id": row.parent_id,
        "session_id": row.session_id,
        "supersedes": row.supersedes,
        "record": row.record.decode("utf-8", "surrogatepass") if row.record is not None else None,
        "checksum": row.checksum,
        "chain_hash": row.chain_hash,
        "received_at": row.received_at,
        "importance": row.importance,
        "seal": row.seal,
    }
    if row.record is None:
        out["mark"] = row.fingerprint  # the erasure mark
    elif row.fingerprint is not None and row.fingerprint == store.hasher.amendment_mark(
        row.chain_hash, row.record
    ):
        out["mark"] = row.fingerprint  # forget rewrote the session id: the mark stands for it
    return out


class BundleTooLarge(LedgerError, ValueError):
    """A segment of the bundle would hold more chain rows than the server's limit
    (``Settings.evidence_max_rows``); the route answers 422 with this message."""

    def __init__(self, agent: str, first: int, last: int, limit: int) -> None:
        super().__init__(
            f"event_id: its evidence needs the {last - first + 1:,} chain rows of agent "
            f"{agent!r} from sequence number {first} to the signed head at {last}, more than "
            f"the {limit:,} a bundle may hold (AGENTLEDGER_EVIDENCE_MAX_ROWS)"
        )


def _covering_head(signer: HeadSigner, agent: str, needed: int) -> tuple[dict[str, Any], bool]:
    """The earliest stored head at or after ``needed`` signed by the active key (the
    segment then ends there, not at the newest head: the background signer's heads keep an
    old event's bundle small), else a head signed now."""
    signer.keyring.refresh()  # a rotation by another process changes the active key
    stored = signer.first_covering(agent, needed)
    if stored is not None:
        return stored, False
    return signer.sign(agent), True


def _anchors(store: SQLStore, agent: str, first: int, head: dict[str, Any]) -> list[dict[str, Any]]:
    query = (
        select(signed_heads)
        .where(
            signed_heads.c.agent == agent,
            signed_heads.c.sequence_no >= first,
            signed_heads.c.sequence_no < head["sequence_no"],
        )
        .order_by(signed_heads.c.sequence_no.desc(), signed_heads.c.id.desc())
        .limit(MAX_ANCHORS)
    )
    with store.reader() as conn:
        return [_row_head(row) for row in conn.execute(query)]


def _segment(
    store: SQLStore, signer: HeadSigner, agent: str, seqs: list[int], max_rows: int
) -> Segment:
    first = min(seqs)
    head, signed_now = _covering_head(signer, agent, max(seqs))
    if head["sequence_no"] - first + 1 > max_rows:
        raise BundleTooLarge(agent, first, head["sequence_no"], max_rows)
    before = store.chain_row_at(agent, first - 1) if first > 1 else None
    rows = []
    for row in store.chain_rows(agent, after_seq=first - 1):
        if row[0] > head["sequence_no"]:
            break
        rows.append(_row(store, ChainRow(*row)))
    return Segment(
        agent=agent,
        first_seq=first,
        previous_hash=before.chain_hash if before is not None else None,
        head=head,
        anchors=_anchors(store, agent, first, head),
        rows=rows,
        signed_now=signed_now,
    )


def gather_material(
    store: SQLStore,
    signer: HeadSigner,
    event_id: str,
    *,
    agent_scope: str | None,
    max_rows: int,
) -> BundleMaterial | None:
    """The material of ``event_id``'s bundle; ``None`` when the event is not stored (or the
    scoped key may not see it).

    Raises:
        BundleTooLarge: an agent's segment would hold more than ``max_rows`` chain rows
            (``Settings.evidence_max_rows``).
        SigningRefused: a head had to be signed and the agent's head does not match its rows.
        KeyringError: the signing keys cannot be used.
    """
    why = store.why(
        event_id,
        depth=limits.WHY_DEPTH_DEFAULT,
        limit=limits.LINEAGE_LIMIT_DEFAULT,
        agent_scope=agent_scope,
    )
    if why is None or (agent_scope is not None and why.anchor_agent != agent_scope):
        return None
    impact = store.impact(
        event_id,
        depth=limits.IMPACT_DEPTH_DEFAULT,
        limit=limits.LINEAGE_LIMIT_DEFAULT,
        agent_scope=agent_scope,
    )
    assert impact is not None  # the event is stored: why found it
    ancestry = _wire(why.events)
    effects = _wire(impact.events)
    event = next(e for e in ancestry if e["event_id"] == event_id)
    events = {e["event_id"]: e for e in [*ancestry, *effects]}
    edges = {(e["effect"], e["cause"], e["kind"]): e for e in [*why.edges, *impact.edges]}
    material = BundleMaterial(
        event_id=event_id,
        agent=why.anchor_agent,
        event=event,
        why={
            "events": [e["event_id"] for e in ancestry],
            "roots": why.roots,
            "missing": why.missing,
            "cut_at": why.cut_at,
            "depth_truncated": why.depth_truncated,
            "size_truncated": why.size_truncated,
        },
        impact={
            "events": [e["event_id"] for e in effects],
            "cut_at": impact.cut_at,
            "depth_truncated": impact.depth_truncated,
            "size_truncated": impact.size_truncated,
        },
        edges=[edges[k] for k in sorted(edges)],
        events=list(events.values()),
    )
    by_agent: dict[str, list[int]] = {}
    for item in events.values():
        by_agent.setdefault(item["agent"], []).append(int(item["sequence_no"]))
    order = [material.agent, *sorted(a for a in by_agent if a != material.agent)]
    material.segments = [
        _segment(store, signer, agent, by_agent[agent], max_rows) for agent in order
    ]
    material.decision = decision_view(store, event_id, agent_scope=agent_scope)
    return material
