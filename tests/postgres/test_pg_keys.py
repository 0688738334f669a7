"""``tests/server/test_keys.py`` re-run on PostgreSQL, plus key checks on the PostgreSQL tables.

Tests of the SQLite suite that open the SQLite file (or a ``tmp_path`` file) themselves are
replaced here by their PostgreSQL equivalents.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from fastapi import FastAPI

from _stores import reuse_tests
from agentledger.server._store import open_store


@pytest.fixture
def db(pg_db: str) -> str:
    return pg_db


SUITE = reuse_tests("server/test_keys.py", globals(), skip_if_source_has=("sqlite3", "tmp_path"))


async def test_key_is_stored_hashed_in_postgres(app: FastAPI, db: str) -> None:
    created = await SUITE.make_key(app, scope="read_write")
    raw = created["key"]
    with psycopg.connect(db) as conn:
        rows = conn.execute("SELECT key_hash, name, scope FROM api_keys").fetchall()
        dump = conn.execute("SELECT api_keys::text FROM api_keys").fetchall()
    assert rows == [(hashlib.sha256(raw.encode()).hexdigest(), "k", "read_write")]
    assert raw not in str(dump)


def test_keys_admin_cli_bootstraps_a_key_in_postgres(db: str) -> None:
    exe = Path(sys.executable).parent / "agentledger"
    proc = subprocess.run(
        [str(exe), "keys-admin", "create", "--db", db, "--name", "ops", "--scope", "read_only"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    store = open_store(db)
    try:
        record = store.key_by_hash(hashlib.sha256(proc.stdout.strip().encode()).hexdigest())
    finally:
        store.close()
    assert record is not None and record.scope == "read_only" and record.name == "ops"
