"""A long SQLite chain verified in ranges by worker processes gives the report one walk gives:
the same verdict, the same problems at the same rows, the same counts, with tampering at,
just before and just after each cut, through the real route and real worker processes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from _servers import free_port, wait_for_health
from agentledger.server import Settings, create_app
from agentledger.server._verify_ranges import RangeVerifier

KEY = "ranges-key"
AGENT = "long-chain"
ROWS = 3_000
#: With these settings the 3,000 rows are cut after rows 1,000 and 2,000.
WORKERS, SPLIT_ROWS = 2, 1_000
CUTS = (1_000, 2_000)


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://localhost",
        headers={"Authorization": f"Bearer {KEY}"},
    )


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ledger of 3,000 linked events (every tenth also names its cause in ``caused_by``,
    every third is a closing event), written through the batch route."""
    path = tmp_path_factory.mktemp("ranges") / "pristine.db"
    app = create_app(Settings(db=str(path), dev_key=KEY))

    async def fill() -> None:
        async with _client(app) as client:
            parent: str | None = None
            for start in range(0, ROWS, 500):
                items = []
                for i in range(start + 1, start + 501):
                    item: dict[str, Any] = {
                        "agent": AGENT,
                        "event": "llm_end" if i % 3 == 0 else "step",
                        "event_id": f"00000000-0000-4000-8000-{i:012d}",
                        "session_id": f"s{i // 700}",
                        "data": {"i": i, "duration_ms": i / 7},
                    }
                    if parent is not None:
                        item["parent_id"] = parent
                        if i % 10 == 0:
                            item["caused_by"] = [{"event_id": parent, "kind": "read"}]
                    items.append(item)
                    parent = item["event_id"]
                response = await client.post("/v1/events/batch", json={"events": items})
                assert response.json()["written"] == 500, response.text

    asyncio.run(fill())
    app.state.store.close()
    return path


@pytest.fixture(scope="module")
def verifier() -> Iterator[RangeVerifier]:
    """One set of worker processes for the whole module (as one server keeps them)."""
    shared = RangeVerifier(WORKERS, SPLIT_ROWS)
    yield shared
    shared.close()


class Pair:
    """The same ledger file behind two apps: one verifies in one walk, one in ranges."""

    def __init__(self, path: Path, verifier: RangeVerifier) -> None:
        self.path = path
        self.single = create_app(Settings(db=str(path), dev_key=KEY, verify_workers=0))
        self.split = create_app(
            Settings(db=str(path), dev_key=KEY, verify_workers=WORKERS, verify_split_rows=1000)
        )
        self.split.state.verifier = verifier

    def sql(self, statement: str, *params: Any) -> None:
        with sqlite3.connect(self.path) as conn:
            conn.execute(statement, params)

    async def reports(self, **params: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        out = []
        for app in (self.single, self.split):
            async with _client(app) as client:
                response = await client.get("/v1/events/chain", params={"agent": AGENT, **params})
                assert response.status_code == 200, response.text
                out.append(response.json())
        return out[0], out[1]

    def close(self) -> None:
        self.single.state.store.close()
        self.split.state.store.close()


@pytest.fixture
async def pair(pristine: Path, verifier: RangeVerifier, tmp_path: Path) -> AsyncIterator[Pair]:
    path = tmp_path / "ledger.db"
    shutil.copyfile(pristine, path)
    made = Pair(path, verifier)
    yield made
    made.close()


@pytest.fixture
def split_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger="agentledger")
    return caplog


def _ranges(log: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in log.records if "ranges" in r.getMessage()]


def _event_id(seq: int) -> str:
    return f"00000000-0000-4000-8000-{seq:012d}"


async def test_an_intact_long_chain_is_verified_in_ranges_with_the_same_report(
    pair: Pair, split_log: pytest.LogCaptureFixture
) -> None:
    single, split = await pair.reports()
    assert single["intact"] and single["verified"] == ROWS
    assert split == single
    assert _ranges(split_log) == [f"verify: {AGENT} in 3 ranges, {ROWS} rows"]


def _edit_record(seq: int) -> Callable[[Pair], None]:
    return lambda p: p.sql(
        "UPDATE events SET record = CAST(replace(CAST(record AS TEXT), '\"i\":', '\"j\":')"
        " AS BLOB) WHERE sequence_no = ?",
        seq,
    )


def _edit_link(seq: int) -> Callable[[Pair], None]:
    return lambda p: p.sql("UPDATE events SET chain_hash = ? WHERE sequence_no = ?", "0" * 64, seq)


def _swap(a: int, b: int) -> Callable[[Pair], None]:
    def run(p: Pair) -> None:
        p.sql("UPDATE events SET sequence_no = -1 WHERE sequence_no = ?", a)
        p.sql("UPDATE events SET sequence_no = ? WHERE sequence_no = ?", a, b)
        p.sql("UPDATE events SET sequence_no = ? WHERE sequence_no = -1", b)

    return run


def _delete(seq: int) -> Callable[[Pair], None]:
    return lambda p: p.sql("DELETE FROM events WHERE sequence_no = ?", seq)


def _edit_received_at(seq: int) -> Callable[[Pair], None]:
    return lambda p: p.sql(
        "UPDATE events SET received_at = '2020-01-01T00:00:00.000000Z' WHERE sequence_no = ?",
        seq,
    )


def _drop_edges(seq: int) -> Callable[[Pair], None]:
    return lambda p: p.sql("DELETE FROM event_causes WHERE effect_id = ?", _event_id(seq))


def _null_record(seq: int) -> Callable[[Pair], None]:
    return lambda p: p.sql("UPDATE events SET record = NULL WHERE sequence_no = ?", seq)


CASES: dict[str, Callable[[Pair], None]] = {}
for _cut in CUTS:
    for _seq in (_cut - 65, _cut - 64, _cut - 1, _cut, _cut + 1):
        CASES[f"record edited at {_seq}"] = _edit_record(_seq)
        CASES[f"chain_hash alone edited at {_seq}"] = _edit_link(_seq)
    for _seq in (_cut, _cut + 1):
        CASES[f"row {_seq} deleted"] = _delete(_seq)
        CASES[f"received_at edited at {_seq}"] = _edit_received_at(_seq)
        CASES[f"edges of {_seq} deleted"] = _drop_edges(_seq)
        CASES[f"record of {_seq} set to NULL by hand"] = _null_record(_seq)
    CASES[f"rows {_cut} and {_cut + 1} swapped"] = _swap(_cut, _cut + 1)
    CASES[f"rows {_cut - 1} and {_cut} swapped"] = _swap(_cut - 1, _cut)
    CASES[f"rows {_cut - 30} and {_cut + 30} swapped"] = _swap(_cut - 30, _cut + 30)
CASES["the last row deleted"] = _delete(ROWS)
CASES["the first row edited"] = _edit_record(1)


@pytest.mark.parametrize("case", list(CASES))
async def test_tampering_around_a_cut_is_reported_as_one_walk_reports_it(
    pair: Pair, split_log: pytest.LogCaptureFixture, case: str
) -> None:
    CASES[case](pair)
    single, split = await pair.reports()
    assert not single["intact"]
    assert split == single
    assert len(_ranges(split_log)) == 1


async def test_an_anchored_verification_is_cut_after_its_anchor(
    pair: Pair, split_log: pytest.LogCaptureFixture
) -> None:
    """From ``after_seq=500`` the 2,500 rows are cut after 1,333 and 2,166; no range walks
    rows before the anchor."""
    _edit_link(1_334)(pair)
    _edit_record(501)(pair)
    _edit_record(200)(pair)  # before the anchor: not read
    single, split = await pair.reports(after_seq=500)
    assert [p["sequence_no"] for p in single["problems"]] == [501, 1_334]
    assert split == single
    assert _ranges(split_log) == [f"verify: {AGENT} in 3 ranges, 2500 rows"]


async def test_a_real_forget_at_a_cut_verifies_intact_in_ranges(pair: Pair) -> None:
    async with _client(pair.split) as client:
        response = await client.request(
            "DELETE",
            "/v1/memory/forget",
            json={"filter_key": "i", "filter_value": str(CUTS[0]), "agent": AGENT},
        )
    assert response.status_code == 200, response.text
    single, split = await pair.reports()
    assert split == single
    assert split["intact"] and split["erased"] == 1, split["summary"]


@pytest.mark.parametrize("retry_after_s", [0.0, 300.0])
async def test_a_worker_killed_between_two_verifications_falls_back_to_one_walk(
    pair: Pair, split_log: pytest.LogCaptureFixture, retry_after_s: float
) -> None:
    """A dead worker process breaks the pool: that verification is done in the server process
    (same report, a warning), the next ones too until ``retry_after_s`` has passed, and then
    new workers start."""
    own = RangeVerifier(WORKERS, SPLIT_ROWS, retry_after_s=retry_after_s)
    pair.split.state.verifier = own
    others = {child.pid for child in multiprocessing.active_children()}
    try:
        await pair.reports()  # the workers run
        assert len(_ranges(split_log)) == 1
        _edit_record(CUTS[0] + 1)(pair)
        ours = [c for c in multiprocessing.active_children() if c.pid not in others]
        assert 1 <= len(ours) <= WORKERS
        for child in ours:
            with contextlib.suppress(ProcessLookupError):  # gone already: as good as killed
                os.kill(child.pid or 0, signal.SIGKILL)
            child.join()
        single, split = await pair.reports()
        assert split == single and not split["intact"]
        warnings = [r.getMessage() for r in split_log.records if r.levelno == logging.WARNING]
        assert any("verifying in one walk" in w for w in warnings), warnings
        split_log.clear()
        _single, again = await pair.reports()
        assert again == single
        assert len(_ranges(split_log)) == (1 if retry_after_s == 0 else 0)
    finally:
        own.close()


def test_short_chains_and_zero_workers_are_not_cut() -> None:
    assert RangeVerifier(2, 1_000).cuts(0, 999) == []
    assert RangeVerifier(0, 1_000).cuts(0, 10**6) == []
    assert RangeVerifier(3, 1_000).cuts(0, 1_000) == [500]
    assert RangeVerifier(3, 1_000).cuts(100, 100_100) == [25_100, 50_100, 75_100]


async def test_a_long_chain_that_is_being_written_verifies_intact_in_ranges(
    pair: Pair, split_log: pytest.LogCaptureFixture
) -> None:
    """Batches land while the ranges are verified: the workers' later snapshots end below the
    head the server process read, so every report is intact; at the end both walks agree."""

    async def write() -> None:
        parent = _event_id(ROWS)
        async with _client(pair.split) as client:
            for batch in range(20):
                items = []
                for i in range(100):
                    event_id = f"00000000-0000-4000-9000-{batch * 100 + i:012d}"
                    items.append(
                        {
                            "agent": AGENT,
                            "event": "step",
                            "event_id": event_id,
                            "parent_id": parent,
                            "data": {"live": i},
                        }
                    )
                    parent = event_id
                response = await client.post("/v1/events/batch", json={"events": items})
                assert response.json()["written"] == 100, response.text
                await asyncio.sleep(0)

    async def verify_repeatedly() -> list[dict[str, Any]]:
        reports = []
        async with _client(pair.split) as client:
            for _ in range(6):
                response = await client.get("/v1/events/chain", params={"agent": AGENT})
                reports.append(response.json())
        return reports

    _, reports = await asyncio.gather(write(), verify_repeatedly())
    assert all(r["intact"] for r in reports), [r["summary"] for r in reports]
    assert all(r["verified"] >= ROWS for r in reports)
    single, split = await pair.reports()
    assert split == single and split["verified"] == ROWS + 2_000
    assert len(_ranges(split_log)) == 7


UNGUARDED_SCRIPT = """
import sys

import uvicorn

from agentledger.server import Settings, create_app

# no `if __name__ == "__main__":` guard: a spawned worker runs this again and cannot start
db, port = sys.argv[1], int(sys.argv[2])
settings = Settings(db=db, dev_key="{key}", verify_workers=1, verify_split_rows=1000)
uvicorn.run(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
"""


def test_a_server_script_without_a_main_guard_verifies_in_one_walk(tmp_path: Path) -> None:
    """Workers re-run an unguarded script and die: the verification is still answered,
    correct, from the server process, with one warning, and the next one does not try again."""
    script = tmp_path / "serve.py"
    script.write_text(UNGUARDED_SCRIPT.format(key=KEY))
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "ledger.db"), str(port)],
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {KEY}"}
    try:
        wait_for_health(url, server)
        with httpx.Client(base_url=url, headers=headers, timeout=60) as client:
            for start in range(0, 1_500, 500):
                items = [
                    {"agent": AGENT, "event": "step", "data": {"i": i}}
                    for i in range(start, start + 500)
                ]
                assert client.post("/v1/events/batch", json={"events": items}).status_code == 200
            reports = [client.get("/v1/events/chain", params={"agent": AGENT}).json()]
            reports.append(client.get("/v1/events/chain", params={"agent": AGENT}).json())
    finally:
        server.terminate()
        _, stderr = server.communicate(timeout=30)
    for report in reports:
        assert report["intact"] and report["verified"] == 1_500, report["summary"]
    assert stderr.count("verifying in one walk") == 1, stderr[-3000:]
