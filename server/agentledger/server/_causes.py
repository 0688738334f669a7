"""The causal edges an event's record defines: one rule for the writer and for verification.

The write path stores these edges in ``event_causes`` next to the record; chain verification
derives them again from the record (which the hash chain covers) and compares, so an edge
added, removed or relabelled in the table is reported like a changed record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentledger.protocol.vocabulary import CLOSING_EVENTS, EDGE_CAUSE, EDGE_CLOSES

__all__ = ["record_edges"]


def record_edges(
    event: str, parent_id: str | None, caused_by: Iterable[Mapping[str, Any]] | None
) -> list[tuple[str, str]]:
    """``(cause_id, kind)`` of every cause edge of an event, the parent edge first.

    ``caused_by`` is the record's list of ``{"event_id", "kind"}``. The parent edge takes the
    kind of a ``caused_by`` entry naming the parent, else ``closes`` for a closing event type,
    else ``cause``.
    """
    labels = {str(c["event_id"]): str(c.get("kind") or EDGE_CAUSE) for c in caused_by or ()}
    edges: list[tuple[str, str]] = []
    if parent_id is not None:
        kind = labels.get(parent_id) or (EDGE_CLOSES if event in CLOSING_EVENTS else EDGE_CAUSE)
        edges.append((parent_id, kind))
    edges.extend((cause, kind) for cause, kind in labels.items() if cause != parent_id)
    return edges
