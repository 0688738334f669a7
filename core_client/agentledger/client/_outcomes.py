"""What becomes of a sent batch's events once the server answered.

Stored and duplicate events are counted; refused ones are counted and dead-lettered; events
the server could not take now go back, ahead of anything newer: a batch from memory to the
front of the spill (or of the queue, without a spill), a batch from the spill stays in its
segment. Events held back for a missing cause are parked. docs/design/client-sender.md
describes the whole path.
"""

from __future__ import annotations

import threading

from agentledger.client._disk_moves import DiskMoves
from agentledger.client._exporter import Answer
from agentledger.client._problems import Problems, Refusal
from agentledger.client._spill import Segment, SpillStore
from agentledger.client._tally import Tally
from agentledger.client._wire import Item

__all__ = ["Outcomes"]


class Outcomes:
    """Places the events of an answered batch; called from the sender's worker only."""

    def __init__(
        self,
        *,
        tally: Tally,
        problems: Problems,
        disk: DiskMoves,
        spill: SpillStore | None,
        order: threading.RLock,
    ) -> None:
        self._tally = tally
        self._problems = problems
        self._disk = disk
        self._spill = spill
        self._order = order

    def memory(self, items: list[Item], lines: list[bytes], answer: Answer) -> None:
        """The answer to a batch taken from memory (``lines`` are ``items`` serialised)."""
        failed, dead = self._problems.refused(lines, answer)
        self._tally.outcome(
            stored=answer.stored,
            duplicates=answer.duplicates,
            failed=failed,
            dead_lettered=dead,
            source="memory",
        )
        if answer.held:
            self._disk.hold([lines[i] for i in answer.held], [items[i] for i in answer.held])
        if answer.kept:
            kept = [items[i] for i in answer.kept]
            with self._order:  # older than anything spilled meanwhile: goes first
                if self._spill is None or not self._disk.spill_lines(
                    [lines[i] for i in answer.kept], sync=True, first=True, drop=False
                ):
                    self._disk.back_to_memory(kept)

    def spilled(self, segment: Segment, lines: list[bytes], answer: Answer) -> None:
        """The answer to a batch read from a spill ``segment`` (ours or adopted)."""
        assert self._spill is not None
        parked = False
        if answer.held:
            parked = self._spill.hold([lines[i] for i in answer.held])
        kept = sorted(answer.kept + ([] if parked else answer.held))  # unparked: stay put
        refusals: list[Refusal | None] = []

        def dead_letter() -> None:  # before the segment's file may be deleted
            refusals.append(self._problems.dead_letter(lines, answer))

        if not self._spill.delivered(segment, len(lines), [lines[i] for i in kept], dead_letter):
            return  # close() released the segment meanwhile: the next process answers for it
        if parked:
            own = len(answer.held) if segment.own else 0
            self._tally.held_back(own=own, adopted=len(answer.held) - own)
        failed, dead = self._problems.announce(refusals[0] if refusals else None)
        self._tally.outcome(
            stored=answer.stored,
            duplicates=answer.duplicates,
            failed=failed,
            dead_lettered=dead,
            source="spill" if segment.own else "backlog",
        )
        self._problems.report(answer.error)
