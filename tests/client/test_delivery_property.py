"""Property test of background delivery (README "Delivery"): random sequences of faults never
lose, duplicate or miscount an event.

A real ``agentledger serve`` (SQLite) sits behind :class:`Gate`, a small real TCP proxy the
test can switch *down* (the port refuses connections and open connections are reset, even in
the middle of a request), *up* again on the same port, or *slow* (each chunk sent to the server
waits). Hypothesis drives one client at a time through random steps: log events (some
poisoned so the server refuses them per item), gate down / up / slow, ``flush(timeout)``, and
"process exit" (``close(timeout)``, then a new client on the same spill directory that adopts
the backlog, sometimes with a spill cap too small to hold anything).

After every step: each client's counters obey the bookkeeping identity of
``agentledger.client._models.delivery`` with nothing negative, a closed client holds nothing
in memory, the dead-letter file holds at least what the counters say was dead-lettered, and
(while the server is reachable) every logged event is stored, dead-lettered, on disk in a
spill file, or accounted for in memory or as dropped. At the end (gate up, a fresh client
flushes to completion): every event is stored once or dead-lettered once or counted dropped,
nothing is left on disk, the counters match the dead-letter file and the server, and the
agent's chain is intact.
"""

from __future__ import annotations

import collections
import contextlib
import socket
import struct
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    rule,
    run_state_machine_as_test,
)

from agentledger.client import Ledger, RetryPolicy, Stats

from .conftest import chain_report, stored_events

pytestmark = pytest.mark.slow

#: Spill cap of a client made "with a full disk": smaller than one event line.
TINY_SPILL_BYTES = 64


class Gate:
    """A real TCP proxy on a fixed loopback port in front of ``upstream_port``.

    ``down()`` closes the listening socket and resets every open connection (requests in
    flight included); ``up()`` listens on the same port again; ``delay_s`` > 0 makes every
    chunk towards the server wait that long (a slow server)."""

    def __init__(self, upstream_port: int) -> None:
        self._upstream = upstream_port
        self.delay_s = 0.0
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self.port = 0
        self.up()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def is_up(self) -> bool:
        return self._listener is not None

    def up(self) -> None:
        if self._listener is not None:
            return
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            conns, self._conns = self._conns, set()
        for conn in conns:
            with contextlib.suppress(OSError):
                # RST instead of FIN: the client sees a reset, as from a killed server.
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            if self._listener is not listener:
                client.close()
                return
            try:
                server = socket.create_connection(("127.0.0.1", self._upstream))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns.update((client, server))
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, slow: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if slow and self.delay_s:
                    time.sleep(self.delay_s)
                target.sendall(chunk)
        except OSError:
            pass
        finally:
            for sock in (source, target):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
            with self._lock:
                self._conns.discard(source)
                self._conns.discard(target)

    def close(self) -> None:
        self.down()


def _spill_files(spill_dir: Path) -> list[Path]:
    return sorted(p for p in spill_dir.rglob("*.ndjson") if "dead-letter" not in p.parts)


def _spill_ids(spill_dir: Path) -> list[str]:
    """Event ids of every complete line in the spill segments on disk."""
    ids: list[str] = []
    for path in _spill_files(spill_dir):
        with contextlib.suppress(FileNotFoundError):
            for line in path.read_bytes().splitlines():
                if line.strip():
                    with contextlib.suppress(orjson.JSONDecodeError):
                        ids.append(orjson.loads(line)["event_id"])
    return ids


def _dead_ids(path: Path | None) -> list[str]:
    if path is None or not path.exists():
        return []
    return [orjson.loads(line)["event"]["event_id"] for line in path.read_bytes().splitlines()]


def _check_identity(stats: Stats, *, closed: bool) -> None:
    assert stats.enqueued == (
        stats.sent + stats.failed + stats.dropped + stats.queue_depth + stats.in_spill
    ), stats
    for name in (
        "sent",
        "failed",
        "dropped",
        "queue_depth",
        "in_spill",
        "in_backlog",
        "duplicates",
        "dead_lettered",
        "spilled",
        "unspilled",
        "backlog_sent",
        "backlog_failed",
    ):
        assert getattr(stats, name) >= 0, (name, stats)
    assert stats.duplicates <= stats.sent + stats.backlog_sent, stats
    assert stats.unspilled <= stats.spilled, stats
    assert stats.backlog_sent + stats.backlog_failed + stats.in_backlog == stats.backlog_adopted, (
        stats
    )
    if closed:
        assert stats.queue_depth == 0, stats  # close() leaves nothing in memory


class DeliveryMachine(RuleBasedStateMachine):
    """One client at a time against the gate; see the module notes."""

    server: Any
    gate: Gate
    root: Path

    def __init__(self) -> None:
        super().__init__()
        self.agent = f"prop-{uuid.uuid4().hex[:10]}"
        self.spill_dir = self.root / f"spill-{uuid.uuid4().hex[:8]}"
        self.gate.up()
        self.gate.delay_s = 0.0
        self.logged: list[str] = []
        self.poisoned: set[str] = set()
        self.closed: list[Ledger] = []
        self.ledger = self._new_ledger(tiny_spill=False)

    def _new_ledger(self, *, tiny_spill: bool) -> Ledger:
        return Ledger(
            self.gate.url,
            self.server.api_key,
            self.agent,
            spill_dir=self.spill_dir,
            flush_interval_s=0.05,
            max_batch_events=50,
            max_queue_events=200,
            retry=RetryPolicy(deadline_s=0.5, initial_backoff_s=0.05, max_backoff_s=0.2),
            timeout=2.0,
            max_spill_bytes=TINY_SPILL_BYTES if tiny_spill else 64 * 1024 * 1024,
            flush_timeout_s=0.5,
        )

    @property
    def clients(self) -> list[Ledger]:
        return [*self.closed, self.ledger]

    # -- steps -----------------------------------------------------------------------------

    @rule(count=st.integers(1, 300), poison=st.sets(st.integers(0, 299), max_size=3))
    def log(self, count: int, poison: set[int]) -> None:
        """Log ``count`` events; those at the ``poison`` indexes name themselves as parent
        (the server refuses each alone with a 422)."""
        for i in range(count):
            if i in poison:
                event_id = str(uuid.uuid4())
                self.ledger.log(
                    "step_start", {"i": i, "poison": True}, event_id=event_id, parent_id=event_id
                )
                self.poisoned.add(event_id)
            else:
                event_id = self.ledger.log("step_start", {"i": i}).event_id
            self.logged.append(event_id)

    @rule()
    def server_down(self) -> None:
        self.gate.down()

    @rule()
    def server_up(self) -> None:
        self.gate.up()

    @rule(delay=st.sampled_from([0.0, 0.05, 0.4]))
    def slow(self, delay: float) -> None:
        self.gate.delay_s = delay

    @rule(timeout=st.sampled_from([0.0, 0.2, 1.0]))
    def flush(self, timeout: float) -> None:
        started = time.monotonic()
        result = self.ledger.flush(timeout)
        assert time.monotonic() - started < timeout + 3.0  # bounded even against a slow gate
        assert result.pending == result.in_memory + result.in_spill + result.in_backlog
        if result.complete:
            stats = self.ledger.stats()
            assert stats.in_backlog == 0, (result, stats)

    @rule(timeout=st.sampled_from([0.0, 0.3, 1.0]), tiny_spill=st.booleans())
    def process_exit(self, timeout: float, tiny_spill: bool) -> None:
        """close(timeout), then a new client on the same spill directory."""
        started = time.monotonic()
        result = self.ledger.close(timeout)
        assert time.monotonic() - started < timeout + 3.0
        assert result.in_memory == 0, result
        self.closed.append(self.ledger)
        self._check_all_closed_on_disk()
        self.ledger = self._new_ledger(tiny_spill=tiny_spill)

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def counters_add_up(self) -> None:
        for client in self.clients:
            _check_identity(client.stats(), closed=client is not self.ledger)

    @invariant()
    def dead_letter_file_holds_what_was_counted(self) -> None:
        counted = sum(c.stats().dead_lettered for c in self.clients)  # read before the file
        dead = _dead_ids(self.ledger.dead_letter_path)
        assert len(dead) >= counted
        assert set(dead) <= self.poisoned  # only refused events are dead-lettered

    @invariant()
    def every_event_is_somewhere(self) -> None:
        # Read in the order events move (memory -> disk -> dead-letter file / server), so an
        # event moving meanwhile is seen in one place or the other. The server itself is
        # always reachable here: only the gate in front of it goes down.
        stats = [c.stats() for c in self.clients]
        in_memory = sum(s.queue_depth for s in stats)
        dropped = sum(s.dropped for s in stats)
        on_disk = set(_spill_ids(self.spill_dir))
        dead = set(_dead_ids(self.ledger.dead_letter_path))
        stored = self._stored_ids()
        missing = set(self.logged) - stored - dead - on_disk
        assert len(missing) <= in_memory + dropped, (len(missing), stats)
        assert not stored & self.poisoned

    def _stored_ids(self) -> set[str]:
        events = stored_events(self.server.url, self.server.api_key, self.agent)
        ids = [e["event_id"] for e in events]
        twice = [i for i, n in collections.Counter(ids).items() if n > 1]
        assert twice == []
        assert set(ids) <= set(self.logged)
        return set(ids)

    def _check_all_closed_on_disk(self) -> None:
        """Right after close(), no client is live: what is neither stored, dead-lettered nor
        dropped is in a spill file."""
        stats = [c.stats() for c in self.clients]
        on_disk = set(_spill_ids(self.spill_dir))
        dead = set(_dead_ids(self.ledger.dead_letter_path))
        stored = self._stored_ids()
        missing = set(self.logged) - stored - dead - on_disk
        assert len(missing) <= sum(s.dropped for s in stats), (len(missing), stats)

    # -- the end ---------------------------------------------------------------------------

    def teardown(self) -> None:
        try:
            self._settle_and_check()
        finally:
            for client in self.clients:
                client.close(0)

    def _settle_and_check(self) -> None:
        self.gate.delay_s = 0.0
        self.gate.up()
        self.ledger.close(1.0)
        self.closed.append(self.ledger)
        self.ledger = self._new_ledger(tiny_spill=False)
        deadline = time.monotonic() + 30
        result = self.ledger.flush(5)
        while not result.complete and time.monotonic() < deadline:
            result = self.ledger.flush(5)
        assert result.complete, (result, self.ledger.stats())
        final = self.ledger.close(5)
        assert final.complete and final.pending == 0, final
        stats = [c.stats() for c in self.clients]
        for s in stats:
            _check_identity(s, closed=True)

        dead_list = _dead_ids(self.ledger.dead_letter_path)
        dead = set(dead_list)
        stored = self._stored_ids()
        logged = set(self.logged)
        assert len(logged) == len(self.logged)
        assert _spill_files(self.spill_dir) == []  # nothing left on disk
        assert not stored & dead
        assert dead <= self.poisoned
        # Each refused event is dead-lettered once (a resent segment must not add it again).
        assert len(dead_list) == len(dead), collections.Counter(dead_list).most_common(3)
        assert sum(s.dead_lettered for s in stats) == len(dead_list), stats
        dropped = sum(s.dropped for s in stats)
        missing = logged - stored - dead
        assert len(missing) <= dropped, (len(missing), stats)
        if dropped == 0:
            assert stored | dead == logged
            assert self.poisoned <= dead  # every refused event is in the file with its reason
        # Every stored event was reported stored by some client (once or more), or counted
        # dropped: a batch in flight when close() gave up, that close() could not spill (cap
        # reached), may still have been stored.
        reported = sum(s.sent + s.backlog_sent for s in stats)
        assert reported + dropped >= len(stored), (len(stored), stats)
        assert sum(s.sent + s.backlog_sent - s.duplicates for s in stats) <= len(stored), stats
        # Each event reaches the server in the order it was logged (spill before memory, a
        # kept batch before what was spilled after it, the backlog of earlier processes first).
        order = [
            e["event_id"] for e in stored_events(self.server.url, self.server.api_key, self.agent)
        ]
        assert order == [i for i in self.logged if i in stored]
        if stored:
            report = chain_report(self.server.url, self.server.api_key, self.agent)
            assert report["intact"] is True, report


def test_random_faults_lose_duplicate_and_miscount_nothing(
    server_factory: Any, tmp_path: Path
) -> None:
    server = server_factory()
    gate = Gate(server.port)
    DeliveryMachine.server = server
    DeliveryMachine.gate = gate
    DeliveryMachine.root = tmp_path
    try:
        run_state_machine_as_test(
            DeliveryMachine,
            settings=settings(
                max_examples=20,
                stateful_step_count=15,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                database=None,
            ),
        )
    finally:
        gate.close()
