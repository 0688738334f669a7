"""Depth of each event in a tree of events, for indented timelines.

Shared by the CLI (``agentledger replay``), the demo's timeline and the MCP server's
``replay_session`` text (``why``/``impact`` are drawn from the server's edges instead). Works
on anything with ``event_id`` and ``parent_id`` attributes (the client's ``Event``, the
server's rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

__all__ = ["TreeNode", "depths"]


class TreeNode(Protocol):
    """What :func:`depths` reads of an event."""

    @property
    def event_id(self) -> str: ...

    @property
    def parent_id(self) -> str | None: ...


def depths(events: Sequence[TreeNode]) -> dict[str, int]:
    """Depth of every event among ``events``: 0 for one whose parent is not in the list.

    Args:
        events: stored events (any order); parents outside the list count as roots.

    Returns:
        ``{event_id: depth}``. Linear in the number of events (each parent walk stops at the
        first event whose depth is known); a parent cycle (only in tampered data) ends the walk.
    """
    by_id = {e.event_id: e for e in events}
    known: dict[str, int] = {}
    for event in events:
        chain: list[str] = []
        current: TreeNode | None = event
        while current is not None and current.event_id not in known:
            chain.append(current.event_id)
            parent = current.parent_id
            current = by_id.get(parent) if parent and parent not in chain else None
        base = known[current.event_id] + 1 if current is not None else 0
        for offset, event_id in enumerate(reversed(chain)):
            known[event_id] = base + offset
    return known
