"""Which kickoffs belong to the crew or flow given to ``instrument``: itself and its copies.

CrewAI runs copies of a crew under new ids: ``kickoff_for_each``, ``kickoff_for_each_async``
and ``akickoff_for_each`` each kick off ``crew.copy()``, never the crew itself. Matching by id
alone would store nothing for them, silently. So the first ``instrument`` call wraps
``Crew.copy`` once for the process (:func:`track_copies`); every copy made from then on is
remembered as ``copy id -> original id`` (bounded, newest kept), and a kickoff belongs to the
target when its crew's id, or the id of any crew it was copied from, is the target's.

A kickoff that cannot be attributed but looks like the target (a crew with the same agents
and tasks, CrewAI's ``Crew.key``; a flow of a class of the same name) is refused loudly by the
listener: a warning on the ``agentledger`` logger and a counter, never a silent gap.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

from crewai import Crew
from crewai.flow.flow import Flow

from agentledger.client import capture_internal_exceptions
from agentledger.integrations._shared import UnsupportedTargetError

__all__ = ["KICKOFF_EVENTS", "Target", "track_copies"]

#: CrewAI events that start a run of a crew or a flow.
KICKOFF_EVENTS: Final = frozenset({"crew_kickoff_started", "flow_started"})

#: Copies remembered at most (the newest are kept; a copy is kicked off right after it is made).
MAX_COPIES: Final = 10_000

_lock = threading.Lock()
_copied_from: OrderedDict[str, str] = OrderedDict()
_patched = False


def _remember(original: Any, copy: Any) -> None:
    with _lock:
        _copied_from[str(copy.id)] = str(original.id)
        while len(_copied_from) > MAX_COPIES:
            _copied_from.popitem(last=False)


def track_copies() -> None:
    """Wrap ``Crew.copy`` (once per process) so every copy names the crew it came from."""
    global _patched
    with _lock:
        if _patched:
            return
        _patched = True
    original: Callable[..., Any] = Crew.copy

    @functools.wraps(original)
    def copy(self: Any, *args: Any, **kwargs: Any) -> Any:
        made = original(self, *args, **kwargs)
        with capture_internal_exceptions("crewai.copy"):
            _remember(self, made)
        return made

    Crew.copy = copy  # type: ignore[method-assign, unused-ignore]


def _lineage(crew_id: str) -> list[str]:
    """``crew_id`` and every id it was copied from, nearest first (cycle-safe)."""
    with _lock:
        found = [crew_id]
        while (earlier := _copied_from.get(found[-1])) is not None and earlier not in found:
            found.append(earlier)
        return found


class Target:
    """The crew or flow an instrumented listener logs, or ``None`` for every run.

    Args:
        target: a ``crewai.Crew`` or a ``crewai.flow.Flow`` instance, or ``None``.

    Raises:
        TypeError: anything else (an ``UnsupportedTargetError``, also a
            :class:`~agentledger.protocol.LedgerError`).
    """

    def __init__(self, target: Any) -> None:
        if target is not None and not isinstance(target, Crew | Flow):
            raise UnsupportedTargetError(
                "instrument() takes a crewai.Crew or a crewai Flow instance (or None for every "
                f"run of the process); got {type(target).__name__}"
            )
        self.obj: Any = target
        self.kind = "crew" if isinstance(target, Crew) else "flow"
        self._id = str(getattr(target, "id", "")) if target is not None else ""
        if isinstance(target, Crew):
            track_copies()

    @property
    def everything(self) -> bool:
        """True when every crew and flow of the process is logged."""
        return self.obj is None

    def runs(self, source: Any, event_type: str) -> bool:
        """Whether ``source`` kicking off (``event_type``) is a run of the target or a copy."""
        if self.obj is None or event_type not in KICKOFF_EVENTS:
            return False
        if source is self.obj:
            return True
        if (event_type == "crew_kickoff_started") != (self.kind == "crew"):
            return False
        source_id = getattr(source, "id", None)
        return source_id is not None and self._id in _lineage(str(source_id))

    def resembles(self, source: Any, event_type: str) -> bool:
        """Whether an unattributed kickoff looks like the target (same crew key, flow class
        name)."""
        if self.obj is None or event_type not in KICKOFF_EVENTS:
            return False
        if self.kind == "crew":
            key = getattr(source, "key", None)
            return isinstance(source, Crew) and key is not None and key == self.obj.key
        return _class_name(source) == _class_name(self.obj)


def _class_name(obj: Any) -> tuple[str, str]:
    """A class by name: a flow class defined in a function is a new class on every call."""
    cls = type(obj)
    return cls.__module__, cls.__qualname__
