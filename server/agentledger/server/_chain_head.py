"""The agent head (the ``agents`` row: ``last_seq``, ``last_hash``, ``event_count``,
``first_seen``, ``last_seen``) checked against the chain that verification just walked.

The writer links the next event to ``last_hash`` at ``last_seq + 1`` and the agent listing
shows the counters, so an edit of any of them is reported as ``head_changed`` (or
``missing_or_reordered`` when rows beyond the chain's end are gone). Design:
``docs/design/server-chain.md``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from agentledger.server._chain import ChainReport, ChainRowTuple

__all__ = ["AgentHead", "ChainSnapshot", "check_head"]


class AgentHead(NamedTuple):
    """The stored ``agents`` row and the timestamp bounds of the agent's stored events."""

    last_seq: int
    last_hash: str
    event_count: int
    first_seen: str
    last_seen: str
    earliest: str | None
    latest: str | None


class ChainSnapshot(NamedTuple):
    """The head, chain rows and causal edges of one agent as one read transaction saw them.

    Verification compares the three with each other, so they must come from the same moment:
    read separately, a write that lands in between moves the head past the last row read and
    a live agent looks truncated. ``rows`` and ``edges`` are lazy (consume them inside the
    ``with`` block of :meth:`LedgerStore.chain_snapshot`).
    """

    head: AgentHead | None
    rows: Iterator[ChainRowTuple]
    edges: Iterator[tuple[int, str, str, str]]


def _head_problem(report: ChainReport, seq: int, detail: str) -> dict[str, Any]:
    event_id = report.head_event if seq == report.head_seq else None
    return {"kind": "head_changed", "event_id": event_id, "sequence_no": seq, "detail": detail}


def check_head(report: ChainReport, head: AgentHead | None) -> None:
    """Add the problems of ``head`` to ``report`` (after :func:`verify_rows`).

    Args:
        report: the walked chain (``head_seq``/``head_hash`` of its last row).
        head: the agent's stored head, ``None`` when the agent has no row.
    """
    problems = report.problems
    clean = not problems
    if head is None:
        if report.head_seq:
            problems.append(
                _head_problem(report, report.head_seq, "the agent has events but no agents row")
            )
        return
    if report.head_seq < head.last_seq:
        problems.append(
            {
                "kind": "missing_or_reordered",
                "event_id": None,
                "sequence_no": report.head_seq + 1,
                "detail": "rows at the end of the chain are missing (the agent head is further)",
            }
        )
        return
    if any(p["sequence_no"] == report.head_seq for p in problems):
        return  # the last row is reported itself (moved, or its own chain_hash edited)
    if report.head_seq > head.last_seq:
        problems.append(
            _head_problem(
                report,
                head.last_seq + 1,
                f"agents.last_seq says {head.last_seq} but the chain runs to {report.head_seq}: "
                f"the next write would reuse sequence_no {head.last_seq + 1}",
            )
        )
    elif head.last_hash != report.head_hash:
        problems.append(
            _head_problem(
                report,
                report.head_seq,
                "agents.last_hash is not the chain hash of the last event: the next write "
                "would link to another chain",
            )
        )
    if head.event_count != report.head_seq:  # forget keeps rows: one per sequence number
        problems.append(
            _head_problem(
                report,
                report.head_seq,
                f"agents.event_count says {head.event_count} but the chain holds "
                f"{report.head_seq} events",
            )
        )
    if not clean:  # a deleted or edited row moves the bounds too: reported there, once
        return
    for column, shown, stored in (
        ("first_seen", head.first_seen, head.earliest),
        ("last_seen", head.last_seen, head.latest),
    ):
        if stored is not None and shown != stored:
            problems.append(
                _head_problem(
                    report,
                    report.head_seq,
                    f"agents.{column} says {shown!r} but the events say {stored!r}",
                )
            )
