"""A ``why()`` or ``impact()`` answer as a tree of text lines a person can follow.

The asked event comes first; under each event, indented, come its causes (``why``) or its
effects (``impact``), each line labelled with the kind of the edge (``[read]``, ``[closes]``...)
and carrying the full event id. The answer is a DAG, so an event reached a second time is not
printed again: a ``↑ see <id>`` line points back to where it was. A cause that is not stored
and an event whose causes or effects a bound left unfollowed get a line of their own, and
:func:`lineage_notes` explains the marks that occur. Only the server's edges are followed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from agentledger.client import Edge, Event, ImpactResult, WhyResult

__all__ = ["MAX_TREE_INDENT", "LineageLine", "lineage_lines", "lineage_notes", "lineage_title"]

#: Levels of tree indentation drawn; deeper lines keep this indentation and say their depth.
MAX_TREE_INDENT: Final = 24

Mark = Literal["event", "seen", "missing", "cut"]


@dataclass(frozen=True, slots=True)
class LineageLine:
    """One line of the tree.

    Attributes:
        prefix: the tree drawing before the line (``│  ├─ ``).
        kind: the edge kind linking it to the line above it (``""`` for the asked event).
        event_id: the event the line is about (``""`` on a ``cut`` line).
        event: the stored event, ``None`` when it is missing or the line is a mark.
        mark: ``event`` (shown in full), ``seen`` (shown above), ``missing`` (not stored) or
            ``cut`` (its causes or effects were not followed).
        depth: edges from the asked event.
    """

    prefix: str
    kind: str
    event_id: str
    event: Event | None
    mark: Mark
    depth: int

    def head(self) -> str:
        """The tree drawing, the depth beyond :data:`MAX_TREE_INDENT` and the edge label."""
        label = f"[{self.kind}] " if self.kind else ""
        deeper = f"(depth {self.depth}) " if self.depth > MAX_TREE_INDENT else ""
        return f"{self.prefix}{deeper}{label}"

    def body(self, describe: str = "") -> str:
        """What the line says after :meth:`head`, ``describe`` being the event's one-line
        description (used on ``event`` lines)."""
        if self.mark == "seen":
            return f"↑ see {self.event_id}"
        if self.mark == "missing":
            return f"✗ {self.event_id} (not stored)"
        if self.mark == "cut":
            return "… not followed further (bound reached)"
        return f"{self.event_id} {describe}".rstrip()

    def text(self, describe: str = "") -> str:
        """The whole line as plain text."""
        return self.head() + self.body(describe)


def _prefix(open_levels: Sequence[bool], last: bool) -> str:
    """Tree drawing for a line whose ancestors' "more siblings follow" flags are
    ``open_levels`` (the last :data:`MAX_TREE_INDENT` of them)."""
    body = "".join("│  " if more else "   " for more in open_levels)
    return body + ("└─ " if last else "├─ ")


def lineage_lines(
    result: WhyResult | ImpactResult, asked: Event | None = None, *, max_lines: int | None = None
) -> list[LineageLine]:
    """The tree of ``result`` from its asked event outwards, depth first.

    Args:
        result: a ``why()`` answer (causes under each event) or an ``impact()`` answer
            (effects under each event).
        asked: the asked event of an ``impact()`` answer (it is not among its ``events``);
            a ``why()`` answer holds it as the last event of its chain.
        max_lines: stop after this many lines (``None``: every line).

    Returns:
        Lines in print order; every event of the answer appears in full exactly once.
    """
    why = isinstance(result, WhyResult)
    events = list(result.chain if isinstance(result, WhyResult) else result.events)
    if asked is not None and all(e.event_id != asked.event_id for e in events):
        events.insert(0, asked)
    by_id = {e.event_id: e for e in events}
    position = {e.event_id: i for i, e in enumerate(events)}
    cut = set(result.cut_at)
    below: dict[str, list[Edge]] = {}
    for edge in result.edges:
        below.setdefault(edge.effect if why else edge.cause, []).append(edge)
    for edges in below.values():
        edges.sort(key=lambda e: position.get(e.cause if why else e.effect, len(position)))

    lines: list[LineageLine] = []
    shown: set[str] = set()
    # (event id or "" for a cut mark, edge kind, depth, is last sibling, open-level flags)
    stack: list[tuple[str, str, int, bool, tuple[bool, ...]]] = [(result.event_id, "", 0, True, ())]
    while stack and (max_lines is None or len(lines) < max_lines):
        node, kind, depth, last, levels = stack.pop()
        prefix = _prefix(levels, last) if depth else ""
        if not node:
            lines.append(LineageLine(prefix, "", "", None, "cut", depth))
        elif node in shown:
            lines.append(LineageLine(prefix, kind, node, by_id.get(node), "seen", depth))
        elif node not in by_id:
            shown.add(node)
            lines.append(LineageLine(prefix, kind, node, None, "missing", depth))
        else:
            shown.add(node)
            lines.append(LineageLine(prefix, kind, node, by_id[node], "event", depth))
            nexts = [(e.cause if why else e.effect, e.kind) for e in below.get(node, [])]
            if node in cut:
                nexts.append(("", ""))
            inner = (*levels, not last)[-MAX_TREE_INDENT:] if depth else ()
            for index in range(len(nexts) - 1, -1, -1):
                nxt, edge_kind = nexts[index]
                stack.append((nxt, edge_kind, depth + 1, index == len(nexts) - 1, inner))
    return lines


def lineage_title(result: WhyResult | ImpactResult) -> str:
    """One line saying what the tree shows and whether it is complete."""
    if isinstance(result, WhyResult):
        roots = len(result.roots)
        head = (
            f"why {result.event_id}: {result.chain_length} event(s), "
            f"{roots} root cause(s); causes under each event"
        )
        gaps = []
        if result.missing:
            gaps.append(f"{len(result.missing)} cause(s) not stored")
        if result.cut_at:
            gaps.append(f"{len(result.cut_at)} event(s) not followed further")
        return head + (f" — incomplete: {', '.join(gaps)}" if gaps else " — complete")
    head = (
        f"impact of {result.event_id}: {result.count} event(s) computed from it; "
        "effects under each event"
    )
    if result.cut_at or result.truncated or result.depth_truncated:
        return head + f" — incomplete: {len(result.cut_at)} event(s) not followed further"
    return head + " — complete"


def lineage_notes(
    lines: Iterable[LineageLine], result: WhyResult | ImpactResult, *, how_to_raise: str
) -> list[str]:
    """What the marks that occur in ``lines`` mean, one sentence each.

    Args:
        lines: the printed tree.
        result: the answer it was drawn from.
        how_to_raise: how to ask again with larger bounds on this surface
            (e.g. ``"--depth/--limit"``).
    """
    marks = {line.mark for line in lines}
    what = "causes" if isinstance(result, WhyResult) else "effects"
    notes = []
    if "seen" in marks:
        notes.append(
            f"↑ see <id>: reached again along another path; its {what} are printed where it "
            "first appears above."
        )
    if "missing" in marks:
        notes.append(
            "✗ <id> (not stored): a cause the event names that the ledger does not hold "
            "(never logged, not sent yet, or another agent's event this key may not read)."
        )
    if "cut" in marks:
        notes.append(
            f"… not followed further: the event above it has {what} that were left out because "
            f"the depth or size bound was reached; ask again with a higher {how_to_raise}."
        )
    return notes
