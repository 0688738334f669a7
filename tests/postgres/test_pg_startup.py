"""Starting on PostgreSQL: clear errors when the database is unreachable or the role lacks
rights, concurrent first starts migrate once, and a held agent lock times out instead of
hanging a request."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from _stores import database_url
from agentledger.server._store import open_store
from agentledger.server._store.postgres import advisory_key


def serve(db: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    """``agentledger serve`` that is expected to refuse to start."""
    exe = Path(sys.executable).parent / "agentledger"
    return subprocess.run(
        [str(exe), "serve", "--db", db, "--port", "1", "--dev-key", "k"],
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_server_is_a_clear_error_without_the_password() -> None:
    proc = serve(f"postgresql://ledger:sekret@127.0.0.1:{free_port()}/ledger")
    assert proc.returncode == 2, proc.stderr
    assert "cannot open PostgreSQL at postgresql://ledger:***@127.0.0.1" in proc.stderr
    assert "running and reachable" in proc.stderr
    assert "sekret" not in proc.stderr and "Traceback" not in proc.stderr


def test_unknown_database_is_a_clear_error(pg_admin_dsn: str) -> None:
    proc = serve(database_url(pg_admin_dsn, f"agentledger_t_missing_{uuid.uuid4().hex[:8]}"))
    assert proc.returncode == 2, proc.stderr
    assert "does not exist" in proc.stderr and "Traceback" not in proc.stderr


@pytest.fixture
def role(pg_admin_dsn: str, fresh_pg_db: str) -> Iterator[str]:
    """A login role with no rights of its own (dropped afterwards)."""
    name = f"agentledger_t_role_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_admin_dsn, autocommit=True) as admin:
        admin.execute(f'CREATE ROLE "{name}" LOGIN')
    try:
        yield name
    finally:
        with psycopg.connect(fresh_pg_db, autocommit=True) as db:
            db.execute(f'DROP OWNED BY "{name}"')
        with psycopg.connect(pg_admin_dsn, autocommit=True) as admin:
            admin.execute(f'DROP ROLE IF EXISTS "{name}"')


def as_role(url: str, role: str) -> str:
    from sqlalchemy.engine.url import make_url

    return make_url(url).set(username=role, password=None).render_as_string(hide_password=False)


def test_role_that_may_not_create_the_schema_is_told_what_to_grant(
    fresh_pg_db: str, role: str
) -> None:
    with psycopg.connect(fresh_pg_db, autocommit=True) as db:
        db.execute(f'REVOKE CREATE ON SCHEMA public FROM PUBLIC, "{role}"')
    proc = serve(as_role(fresh_pg_db, role))
    assert proc.returncode == 2, proc.stderr
    assert "may not create or read the ledger schema" in proc.stderr
    assert "GRANT" in proc.stderr and "Traceback" not in proc.stderr


def test_role_without_table_rights_is_named_with_the_tables(fresh_pg_db: str, role: str) -> None:
    open_store(fresh_pg_db).close()  # the owner migrates
    with psycopg.connect(fresh_pg_db, autocommit=True) as db:
        db.execute(f'GRANT SELECT ON alembic_version, events TO "{role}"')
    proc = serve(as_role(fresh_pg_db, role))
    assert proc.returncode == 2, proc.stderr
    assert f"role '{role}' lacks SELECT, INSERT, UPDATE, DELETE on" in proc.stderr
    assert "agents" in proc.stderr and "events_id_seq" in proc.stderr


def test_the_grants_the_error_names_are_enough(
    fresh_pg_db: str, role: str, server_factory: Any
) -> None:
    open_store(fresh_pg_db).close()
    with psycopg.connect(fresh_pg_db, autocommit=True) as db:
        db.execute(
            f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO "{role}"'
        )
        db.execute(f'GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO "{role}"')
    server = server_factory(db=as_role(fresh_pg_db, role))
    response = httpx.post(
        f"{server.url}/v1/events",
        json={"agent": "granted", "event": "e", "data": {}},
        headers=server.headers(),
    )
    assert response.status_code == 201, response.text


def test_servers_starting_together_migrate_once(fresh_pg_db: str, server_factory: Any) -> None:
    servers = [server_factory(db=fresh_pg_db, start=False) for _ in range(3)]
    # three servers migrating at once on a loaded 2-core machine: allow more than the usual 30 s
    threads = [threading.Thread(target=s.start, kwargs={"timeout_s": 100}) for s in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    for server in servers:
        assert httpx.get(f"{server.url}/health").status_code == 200
    with psycopg.connect(fresh_pg_db) as db:
        assert len(db.execute("SELECT version_num FROM alembic_version").fetchall()) == 1


def test_a_held_agent_lock_times_out_instead_of_hanging(
    pg_db: str, server_factory: Any, agent_name: str
) -> None:
    server = server_factory(db=pg_db, env={"AGENTLEDGER_PG_STATEMENT_TIMEOUT_S": "1"})
    body = {"agent": agent_name, "event": "e", "data": {}}

    def post(payload: dict[str, Any]) -> httpx.Response:
        # a fresh connection each time: the server closes a connection after a 5xx
        return httpx.post(
            f"{server.url}/v1/events", json=payload, headers=server.headers(), timeout=20
        )

    with psycopg.connect(pg_db) as holder:
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (advisory_key(agent_name),))
        started = time.monotonic()
        refused = post(body)
        waited_s = time.monotonic() - started
        assert refused.status_code == 503 and waited_s < 15, refused.text
        assert refused.headers["Retry-After"] == "1"
        other = post({**body, "agent": f"{agent_name}-other"})
        assert other.status_code == 201  # other agents are not held up meanwhile
        holder.rollback()
    written = post(body)
    assert written.status_code == 201 and written.json()["sequence_no"] == 1
