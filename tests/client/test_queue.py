"""The sender's queue on its own: bounded by items and by estimated bytes, FIFO."""

from __future__ import annotations

from agentledger.client._queue import EventQueue, item_bytes
from agentledger.client._wire import Item


def _item(i: int, size: int = 10) -> Item:
    return Item(str(i), "a", "step_start", b"x" * size, 0, None, None, None, None, None, None)


def test_the_byte_budget_bounds_the_queue() -> None:
    """Delivery (memory): a queue of 10 KiB takes events until their estimated bytes reach
    it, whatever the item cap."""
    queue = EventQueue(max_items=1000, max_bytes=10 * 1024)
    taken = 0
    while queue.has_room(item_bytes(_item(taken, 1000))):
        queue.push(_item(taken, 1000), item_bytes(_item(taken, 1000)))
        taken += 1
    assert 0 < taken < 10 and queue.bytes <= 10 * 1024


def test_one_event_larger_than_the_budget_is_still_taken_alone() -> None:
    """An event larger than the whole budget is queued when the queue is empty."""
    queue = EventQueue(max_items=10, max_bytes=1024)
    big = _item(0, 10_000)
    assert queue.has_room(item_bytes(big))
    queue.push(big, item_bytes(big))
    assert not queue.has_room(item_bytes(_item(1)))


def test_fifo_with_push_front_and_exact_byte_accounting() -> None:
    """Events leave in order; a batch put back goes first; bytes follow every move."""
    queue = EventQueue(max_items=100, max_bytes=1 << 20)
    for i in range(10):
        queue.push(_item(i, i), item_bytes(_item(i, i)))
    total = queue.bytes
    batch = queue.pop(4)
    assert [x.event_id for x in batch] == ["0", "1", "2", "3"]
    queue.push_front(batch)
    assert queue.bytes == total
    assert [x.event_id for x in queue.pop(100)] == [str(i) for i in range(10)]
    assert queue.bytes == 0 and len(queue) == 0
