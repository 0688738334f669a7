"""The spill store on its own and a client on a disk that fills up: ordering of segments,
parked files, and counters that match what is on disk when the disk is full (a real 256 KiB
tmpfs; skipped where this process may not mount one)."""

from __future__ import annotations

import contextlib
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentledger.client import Ledger
from agentledger.client._spill import SpillStore


def _lines(prefix: str, n: int) -> list[bytes]:
    return [b'{"id":"%s-%d"}' % (prefix.encode(), i) for i in range(n)]


def _drain(store: SpillStore) -> list[bytes]:
    sent: list[bytes] = []
    while (batch := store.next_batch(7)) is not None:
        segment, lines = batch
        sent += lines
        store.delivered(segment, len(lines))
    return sent


def test_a_prepended_batch_is_resent_before_what_was_spilled_after_it(tmp_path: Path) -> None:
    """Delivery (order): a batch that was in flight while newer events were spilled goes
    before them, in this process and for the next one."""
    store = SpillStore(tmp_path / "d", segment_bytes=64)
    store.append(_lines("newer", 20))
    store.prepend(_lines("older", 5))
    assert _drain(store) == _lines("older", 5) + _lines("newer", 20)

    store.append(_lines("newer", 3))
    store.prepend(_lines("older", 2))
    store.close()
    nxt = SpillStore(tmp_path / "d")
    assert nxt.claim_orphans() == 5
    assert _drain(nxt) == _lines("older", 2) + _lines("newer", 3)
    nxt.close()
    assert list((tmp_path / "d").glob("*.ndjson")) == []


def test_parked_lines_are_not_resent_by_their_writer_but_adopted_by_the_next(
    tmp_path: Path,
) -> None:
    """Delivery: lines parked for another key stay out of this process's resends and are
    adopted by the next process."""
    store = SpillStore(tmp_path / "d")
    assert store.hold(_lines("held", 3))
    assert store.claim_orphans() == 0 and store.next_batch(10) is None
    other = SpillStore(tmp_path / "d")
    assert other.claim_orphans() == 3
    assert _drain(other) == _lines("held", 3)


def test_what_runs_before_delivery_sees_the_segment_file_still_there(tmp_path: Path) -> None:
    """Delivery (nothing lost): the sender dead-letters refused lines in ``delivered``'s
    ``before`` step, which runs while the segment's file still holds them; a segment close()
    released meanwhile runs nothing (the next process answers for its lines)."""
    store = SpillStore(tmp_path / "d")
    store.append(_lines("last", 3))
    batch = store.next_batch(10)
    assert batch is not None
    segment, lines = batch
    seen: list[bool] = []
    assert store.delivered(segment, len(lines), before=lambda: seen.append(segment.path.exists()))
    assert seen == [True]
    assert not segment.path.exists()  # fully delivered: the file is gone afterwards

    store.append(_lines("again", 2))
    batch = store.next_batch(10)
    assert batch is not None
    store.close()
    assert not store.delivered(batch[0], 2, before=lambda: seen.append(False))
    assert seen == [True]


def test_a_partly_delivered_segment_keeps_only_the_rest_at_close(tmp_path: Path) -> None:
    """Delivery: what the server answered for is not sent again by the next process."""
    store = SpillStore(tmp_path / "d")
    store.append(_lines("a", 10))
    segment, _ = store.next_batch(4) or (None, [])
    assert segment is not None
    store.delivered(segment, 4)
    store.close()
    nxt = SpillStore(tmp_path / "d")
    assert nxt.claim_orphans() == 6
    assert _drain(nxt) == _lines("a", 10)[4:]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        with contextlib.suppress(Exception):
            subprocess.run(["umount", str(mount)], check=False)


def test_a_full_disk_counts_exactly_what_is_on_it(small_disk: Path, closed_url: str) -> None:
    """Delivery: with the spill disk full, ``spilled`` equals the events on disk, the rest is
    counted as dropped, no partial line is left, and the counters add up."""
    ledger = Ledger(closed_url, "k", "full-disk", spill_dir=small_disk / "spill")
    padding = "x" * 200
    for i in range(3000):  # about 900 KB of lines for a 256 KiB disk
        ledger.log("step_start", {"i": i, "pad": padding, "id": str(uuid.uuid4())})
    result = ledger.close(2.0)
    stats = ledger.stats()
    raw = b"".join(p.read_bytes() for p in (small_disk / "spill").rglob("seg-*.ndjson"))
    on_disk = raw.count(b"\n")
    assert raw.endswith(b"\n") and on_disk > 0
    assert stats.spilled == stats.in_spill == on_disk == result.in_spill
    assert stats.dropped == 3000 - on_disk and stats.sent == 0
    assert stats.enqueued == stats.sent + stats.failed + stats.dropped + stats.queue_depth + (
        stats.in_spill
    )
