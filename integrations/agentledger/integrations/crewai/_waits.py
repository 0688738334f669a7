"""Events the CrewAI listener writes only once what they were computed from is known.

CrewAI's handler pool may deliver events emitted microseconds apart in any order. A model
call's start names what it read, so it waits for the tool uses running beside it to end and
for the previous model call's output; a task's or crew's end names what produced it, so it
waits for its agent or task to end. Each wait is a ``ready`` check held on a scope and tried
again whenever something inside that scope ends (:meth:`Waits.pump`); ``flush()`` writes
whatever still waits (:meth:`Waits.release_all`).
"""

from __future__ import annotations

from collections.abc import Callable

from agentledger.integrations.crewai._scopes import Scope

__all__ = ["Waits"]

Ready = Callable[[], bool]
Run = Callable[[], None]


class Waits:
    """Writes held on open scopes until they are ready (call with the Sequencer's lock)."""

    def __init__(self) -> None:
        self._held: dict[Scope, list[tuple[Ready, Run]]] = {}

    def __len__(self) -> int:
        return sum(len(items) for items in self._held.values())

    def run_or_hold(self, scope: Scope, ready: Ready, run: Run) -> None:
        """``run()`` now if ``ready()`` and nothing waits on ``scope`` before it, else hold it."""
        if scope not in self._held and ready():
            run()
        else:
            self._held.setdefault(scope, []).append((ready, run))

    def pump(self, scope: Scope | None) -> None:
        """Run the held writes of ``scope`` that are ready now, in the order they came."""
        while scope is not None and scope in self._held:
            items = self._held[scope]
            index = next((i for i, (ready, _) in enumerate(items) if ready()), None)
            if index is None:
                return
            _, run = items.pop(index)
            if not items:
                del self._held[scope]
            run()

    def release_all(self) -> int:
        """Run every held write (ready or not); returns how many."""
        count = 0
        while self._held:
            scope = next(iter(self._held))
            items = self._held.pop(scope)
            for _, run in items:
                run()
                count += 1
        return count
