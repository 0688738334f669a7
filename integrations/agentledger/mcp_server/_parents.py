"""Which event ``log_event`` hangs a new event under: the last one logged in its session."""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

__all__ = ["MAX_SESSION_PARENTS", "SessionParents"]

#: Sessions whose last logged event ``log_event`` remembers (least recently used evicted).
MAX_SESSION_PARENTS: Final = 10_000


class SessionParents:
    """The last event logged in each session, for at most :data:`MAX_SESSION_PARENTS`
    sessions (least recently used forgotten first). One per MCP connection."""

    def __init__(self, limit: int = MAX_SESSION_PARENTS) -> None:
        self._limit = limit
        self._last: OrderedDict[str, str] = OrderedDict()

    def get(self, session_id: str) -> str | None:
        """The last event logged in ``session_id``, or ``None``."""
        return self._last.get(session_id)

    def remember(self, session_id: str, event_id: str) -> None:
        """``event_id`` is now the last event of ``session_id``."""
        last = self._last
        last[session_id] = event_id
        last.move_to_end(session_id)
        while len(last) > self._limit:
            last.popitem(last=False)

    def forget(self, session_id: str, event_id: str, previous: str | None) -> None:
        """``event_id`` will not be stored: ``previous`` is the last event again, unless
        something newer was logged in the session meanwhile."""
        last = self._last
        if last.get(session_id) == event_id:
            if previous is None:
                del last[session_id]
            else:
                last[session_id] = previous
