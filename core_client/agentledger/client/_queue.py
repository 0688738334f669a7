"""The sender's in-memory queue: FIFO, bounded by an item count and by a byte budget.

Not locked itself: the sender guards it with the tally's lock, so an event is counted and
queued in one step (see docs/design/client-sender.md).
"""

from __future__ import annotations

import collections
from typing import Final

from agentledger.client._wire import Item

__all__ = ["DEFAULT_MAX_QUEUE_BYTES", "DEFAULT_MAX_QUEUE_EVENTS", "EventQueue", "item_bytes"]

#: Default memory budget of the queue (estimated bytes of queued events).
DEFAULT_MAX_QUEUE_BYTES: Final = 64 * 1024 * 1024

#: Default item cap of the queue.
DEFAULT_MAX_QUEUE_EVENTS: Final = 100_000

#: Estimated bytes of one queued event besides its JSON ``data`` and ``metadata`` (the tuple,
#: ids, strings and the deque slot; measured with tracemalloc on CPython 3.11, rounded up).
ITEM_OVERHEAD_BYTES: Final = 640


def item_bytes(item: Item) -> int:
    """Estimated memory of one queued event (bytes)."""
    metadata = item.metadata
    return ITEM_OVERHEAD_BYTES + len(item.data) + (len(metadata) if metadata is not None else 0)


class EventQueue:
    """Queued events, oldest first, with their estimated size.

    Args:
        max_items: most events held.
        max_bytes: most estimated bytes held (an event larger than the whole budget is
            still taken when the queue is empty, so no event is refused for its size alone).
    """

    __slots__ = ("_items", "bytes", "max_bytes", "max_items")

    def __init__(self, max_items: int, max_bytes: int) -> None:
        self._items: collections.deque[Item] = collections.deque()
        self.max_items = max_items
        self.max_bytes = max_bytes
        #: Estimated bytes held now.
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._items)

    def has_room(self, size: int) -> bool:
        """Whether an event of ``size`` bytes fits now."""
        items = self._items
        if not items:
            return True
        return len(items) < self.max_items and self.bytes + size <= self.max_bytes

    def push(self, item: Item, size: int) -> None:
        """Append one event (the caller checked :meth:`has_room`)."""
        self._items.append(item)
        self.bytes += size

    def pop(self, limit: int) -> list[Item]:
        """Take up to ``limit`` oldest events."""
        items = self._items
        n = min(len(items), limit)
        batch = [items.popleft() for _ in range(n)]
        if batch:
            self.bytes = max(0, self.bytes - sum(map(item_bytes, batch))) if items else 0
        return batch

    def push_front(self, batch: list[Item]) -> None:
        """Put events taken by :meth:`pop` back at the head, in their order."""
        self._items.extendleft(reversed(batch))
        self.bytes += sum(map(item_bytes, batch))

    def drain(self) -> list[Item]:
        """Take every event."""
        batch = list(self._items)
        self._items.clear()
        self.bytes = 0
        return batch
