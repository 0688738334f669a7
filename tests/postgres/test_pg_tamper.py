"""``tests/server/test_tamper.py`` re-run on PostgreSQL: rows are edited, deleted and reordered
directly in the database (psycopg) and ``verify`` reports each change precisely."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from _stores import reuse_tests


class _SqlOnPostgres:
    """The slice of ``sqlite3.Connection`` the tamper suite uses, on psycopg (autocommit):
    ``execute(sql, params)`` with ``?`` placeholders, returning a cursor."""

    def __init__(self, url: str) -> None:
        self._conn = psycopg.connect(url, autocommit=True)

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        return self._conn.execute(sql.replace("?", "%s"), params)  # type: ignore[call-overload]

    def close(self) -> None:
        self._conn.close()


@pytest.fixture
def db_path(pg_db: str) -> str:
    return pg_db


@pytest.fixture
def sql(db_path: str) -> Iterator[_SqlOnPostgres]:
    conn = _SqlOnPostgres(db_path)
    yield conn
    conn.close()


# left out: tests that open the SQLite file, and SQLite's dynamic typing (bytea is enforced)
SUITE = reuse_tests(
    "server/test_tamper.py",
    globals(),
    skip_if_source_has=("sqlite3.connect", "dynamically typed"),
)


@pytest.mark.parametrize("raw", [b"42", b'"text"', b"[1, 2]"])
async def test_record_replaced_by_other_bytes_is_content_changed(
    client: Any, sql: _SqlOnPostgres, raw: bytes
) -> None:
    """JSON that is not an object (non-JSON bytes are refused by the generated jsonb column)."""
    await SUITE.write(client)
    sql.execute("UPDATE events SET record=? WHERE agent=? AND sequence_no=2", (raw, SUITE.AGENT))
    report = await SUITE.verify(client)
    assert SUITE.kinds(report) == [("content_changed", 2)]


async def test_hmac_chain_detects_a_full_rewrite_in_postgres(db_path: str) -> None:
    app, client = SUITE.make_client(db_path, chain_key="server-secret")
    async with client:
        await SUITE.write(client)
        assert (await SUITE.verify(client))["intact"]
        sql = _SqlOnPostgres(db_path)
        try:
            SUITE._rewrite_chain(sql, from_seq=4, key=None)  # the forger has no HMAC key
        finally:
            sql.close()
        report = await SUITE.verify(client)
    app.state.store.close()
    assert SUITE.kinds(report)[0] == ("content_changed", 4)
