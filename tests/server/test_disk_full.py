"""A full disk is a 507 with ``Retry-After`` and nothing half-written, never a 500.

SQLite: a real server whose database lives on a 3 MiB tmpfs of its own (a private mount
namespace made by ``unshare``), written to until the filesystem is full (ENOSPC, SQLite's
``SQLITE_FULL``). PostgreSQL's ``disk_full`` (53100) cannot be caused from here without filling
the database server's disk, so the mapping is checked with the driver's own exception.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import uuid
from pathlib import Path

import httpx
import psycopg.errors
import pytest
from sqlalchemy.exc import OperationalError

from _servers import ServerProcess, free_port
from agentledger.server._db_errors import database_busy, database_full

_MOUNT = 'mount -t tmpfs -o size=3m tmpfs "$0" && exec "$@"'


def _private_tmpfs_works() -> bool:
    unshare = shutil.which("unshare")
    if unshare is None:
        return False
    probe = subprocess.run(
        [unshare, "--user", "--map-root-user", "--mount", "sh", "-c", _MOUNT, "/mnt", "true"],
        capture_output=True,
        check=False,
    )
    return probe.returncode == 0


def test_a_full_disk_is_507_and_writes_nothing(tmp_path: Path) -> None:
    if not _private_tmpfs_works():
        pytest.skip("needs unshare with user and mount namespaces (a private small tmpfs)")
    mount = tmp_path / "small"
    mount.mkdir()
    server = ServerProcess(
        db=str(mount / "ledger.db"),
        port=free_port(),
        log_path=tmp_path / "server.log",
        wrapper=["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", _MOUNT, str(mount)],
        env={"AGENTLEDGER_SEARCH_INDEXER": "off"},
    )
    server.start()
    try:
        agent = f"full-{uuid.uuid4().hex[:8]}"
        stored: list[str] = []
        full: httpx.Response | None = None
        refused_id = ""
        with httpx.Client(base_url=server.url, headers=server.headers(), timeout=60) as http:
            for n in range(200):
                refused_id = str(uuid.uuid4())
                body = {
                    "agent": agent,
                    "event": "note",
                    "event_id": refused_id,
                    "data": {"n": n, "text": uuid.uuid4().hex * 4_000},  # 128 KB each
                }
                response = http.post("/v1/events", json=body)
                if response.status_code != 200 and response.status_code != 201:
                    full = response
                    break
                stored.append(refused_id)
            assert full is not None, "the 3 MiB filesystem never filled"
            assert full.status_code == 507, full.text
            assert full.headers["retry-after"].isdigit()
            assert "database full" in full.json()["detail"]
            assert len(stored) >= 1

            # Nothing half-written: the refused event is not there, the stored ones are, and
            # the chain is whole.
            assert http.get(f"/v1/events/{refused_id}").status_code == 404
            listed = http.get("/v1/events", params={"agent": agent, "limit": 1000}).json()
            assert sorted(e["event_id"] for e in listed) == sorted(stored)
            chain = http.get("/v1/events/chain", params={"agent": agent}).json()
            assert chain["intact"] is True, chain
            assert chain["verified"] == len(stored)

            # A batch hits the same wall the same way.
            items = [
                {"agent": agent, "event": "note", "data": {"text": uuid.uuid4().hex * 4_000}}
                for _ in range(4)
            ]
            batch = http.post("/v1/events/batch", json={"events": items})
            assert batch.status_code == 507, batch.text
            assert len(http.get("/v1/events", params={"agent": agent, "limit": 1000}).json()) == (
                len(stored)
            )
    finally:
        server.stop()


def _wrapped(origin: BaseException) -> OperationalError:
    return OperationalError("INSERT ...", {}, origin)


@pytest.mark.parametrize(
    ("origin", "full", "busy"),
    [
        (psycopg.errors.DiskFull("could not extend file: No space left on device"), True, False),
        (sqlite3.OperationalError("database or disk is full"), True, False),
        (sqlite3.OperationalError("database is locked"), False, True),
        (psycopg.errors.LockNotAvailable("lock timeout"), False, True),
        (psycopg.errors.QueryCanceled("statement timeout"), False, True),
        (psycopg.errors.OutOfMemory("out of memory"), False, False),
        (sqlite3.OperationalError("no such table: events"), False, False),
    ],
)
def test_which_database_errors_are_full_or_busy(
    origin: BaseException, full: bool, busy: bool
) -> None:
    assert database_full(_wrapped(origin)) is full
    assert database_busy(_wrapped(origin)) is busy
