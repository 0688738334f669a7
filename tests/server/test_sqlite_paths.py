"""Every reader of a SQLite ledger opens the file the pool opens (docs/design/server-store.md,
"Reads on the event loop"): the inline reader, the verify worker processes and the pool agree
on one absolute path, for ``..`` after a symlinked directory (removed lexically, never through
the symlink) and for the ``%xx`` and ``?`` a plain ``--db`` path has always been read with.
A decoy ledger at the other candidate file must never answer.
"""

from __future__ import annotations

import shutil
import sqlite3
import uuid
from pathlib import Path

import pytest

from agentledger.server._auth import new_key
from agentledger.server._chain import ChainReport
from agentledger.server._ingest import now_ts, prepare, validate_item
from agentledger.server._store.sqlite import SQLiteStore, sqlite_path
from agentledger.server._verify_ranges import RangeVerifier, verify_chain_of

AGENT = "paths"


def _key(store: SQLiteStore) -> str:
    _, record = new_key(name="paths", agent=None, scope="read_write", expires_in_days=None)
    store.create_key(record)
    return record.key_hash


def _events(store: SQLiteStore, n: int) -> list[str]:
    ids = [str(uuid.uuid4()) for _ in range(n)]
    items = [
        prepare(
            validate_item({"agent": AGENT, "event": "step", "event_id": i, "data": {"n": k}}),
            max_depth=64,
            patterns=(),
            received_at=now_ts(),
        )
        for k, i in enumerate(ids)
    ]
    assert all(outcome.ok for outcome in store.append(items))
    return ids


@pytest.fixture
def release_layout(tmp_path: Path) -> Path:
    """``app/current -> releases/r1`` and ``app/data/``: ``app/current/../data`` is
    ``app/data`` lexically and ``releases/data`` through the symlink."""
    (tmp_path / "releases" / "r1").mkdir(parents=True)
    (tmp_path / "releases" / "data").mkdir()
    (tmp_path / "app" / "data").mkdir(parents=True)
    (tmp_path / "app" / "current").symlink_to(tmp_path / "releases" / "r1")
    return tmp_path


def test_dot_dot_after_a_symlink_is_removed_lexically(release_layout: Path) -> None:
    decoy = SQLiteStore(str(release_layout / "releases" / "data" / "ledger.db"))
    decoy_key = _key(decoy)
    (decoy_event,) = _events(decoy, 1)
    decoy.close()
    named = str(release_layout / "app" / "current" / ".." / "data" / "ledger.db")
    store = SQLiteStore(named)
    try:
        assert store.path == str(release_layout / "app" / "data" / "ledger.db")
        own_key = _key(store)
        (own_event,) = _events(store, 1)
        for key_hash in (own_key, decoy_key):
            assert store.key_by_hash_inline(key_hash) == store.key_by_hash(key_hash)
        assert store.key_by_hash_inline(decoy_key) is None
        assert store.get_event_inline(decoy_event) is None
        assert store.get_event_inline(own_event) == store.get_event(own_event) is not None
    finally:
        store.close()


def test_split_verification_reads_the_served_file(release_layout: Path) -> None:
    """The worker processes verify the file the server serves: a decoy copy without the
    tampering at the symlink-resolved path must not make the report intact."""
    named = str(release_layout / "app" / "current" / ".." / "data" / "ledger.db")
    store = SQLiteStore(named)
    verifier = RangeVerifier(1, split_rows=4)
    try:
        _events(store, 12)
        with sqlite3.connect(store.path) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        shutil.copy(store.path, release_layout / "releases" / "data" / "ledger.db")
        with sqlite3.connect(store.path) as conn:  # in the first range: a worker's
            conn.execute(
                "UPDATE events SET record = CAST(replace(CAST(record AS TEXT), '\"n\":', "
                "'\"m\":') AS BLOB) WHERE sequence_no = 2"
            )
        assert verifier.cuts(0, 12)
        report = ChainReport()
        verify_chain_of(store, AGENT, report, verifier=verifier)
        assert verifier.cuts(0, 12), "a worker failed (splitting paused): it walked in one"
        assert not report.intact and report.verified == 12
    finally:
        verifier.close()
        store.close()


@pytest.mark.parametrize(
    ("named", "opened"),
    [("led%41ger.db", "ledAger.db"), ("other.db?x=1", "other.db"), ("plain.db", "plain.db")],
)
def test_a_plain_path_opens_the_file_it_always_opened(
    tmp_path: Path, named: str, opened: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain ``--db`` path has always been read as a ``sqlite:///`` URL's database part, so
    an existing ledger keeps its file; the inline reader opens that one too."""
    monkeypatch.chdir(tmp_path)
    assert sqlite_path(named) == str(tmp_path / opened)
    store = SQLiteStore(named)
    try:
        key_hash = _key(store)
        assert store.key_by_hash_inline(key_hash) == store.key_by_hash(key_hash) is not None
    finally:
        store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [opened]  # WAL files gone on close
