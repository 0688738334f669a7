"""What the capture remembers of each session's conversation, bounded in size.

The raw SDK is stateless: every call re-sends the history. To log each user turn and each tool
result once, and to find the ``tool_call`` a result answers, a :class:`Conversation` keeps the
last user turn it logged, the tool calls the model asked for (call id -> event) and the tool
results already logged. :class:`Conversations` holds one per session, the least recently used
dropped beyond ``max_scopes``; inside a conversation the call and result tables are bounded the
same way.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["Conversation", "Conversations", "LoggedCall"]

_K = TypeVar("_K")
_V = TypeVar("_V")


class Bounded(Generic[_K, _V]):
    """A mapping that keeps its ``limit`` most recently set or read keys."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._items: OrderedDict[_K, _V] = OrderedDict()
        self.evicted = 0

    def get(self, key: _K) -> _V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def set(self, key: _K, value: _V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._limit:
            self._items.popitem(last=False)
            self.evicted += 1

    def __len__(self) -> int:
        return len(self._items)


@dataclass(frozen=True)
class LoggedCall:
    """A ``tool_call`` event: its id and the tool's name."""

    event_id: str
    tool: str


@dataclass
class Conversation:
    """The state of one session (see the module docstring)."""

    limit: int
    #: (position in the input, text) of the last user turn logged, and its event
    user_key: tuple[int, str] | None = None
    user_event: str | None = None
    #: the last ``assistant_response``: the cause of the next user turn
    last_answer: str | None = None
    #: whether the last user turn got its ``assistant_response``
    turn_answered: bool = False
    calls: Bounded[str, LoggedCall] = field(init=False)
    results: Bounded[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.calls = Bounded(self.limit)
        self.results = Bounded(self.limit)


class Conversations:
    """One :class:`Conversation` per session id, at most ``limit`` of them."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._table: Bounded[str, Conversation] = Bounded(limit)

    def get(self, session_id: str) -> Conversation:
        conversation = self._table.get(session_id)
        if conversation is None:
            conversation = Conversation(self._limit)
            self._table.set(session_id, conversation)
        return conversation

    @property
    def evicted(self) -> int:
        """Conversations dropped because ``max_scopes`` was reached."""
        return self._table.evicted

    def __len__(self) -> int:
        return len(self._table)
