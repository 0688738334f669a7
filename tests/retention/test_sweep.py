"""Retention end to end on a real ``agentledger serve`` (SQLite and PostgreSQL; README
"Retention"): the scheduled
sweep erases events older than the window to tombstones, the chain still verifies, the
per-agent policy beats the default, the dry run changes nothing, the log says what/when/rule
(docs/pages/retention.md)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import httpx

from _servers import ServerFactory
from _stores import POSTGRES_ONLY

from ._helpers import ago, chain, erased, set_keep, write

FAST = {"AGENTLEDGER_RETENTION_INTERVAL_S": "0.3", "AGENTLEDGER_RETENTION_BATCH": "3"}


def wait_for(predicate: Any, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "the scheduled sweep did not run in time"
        time.sleep(0.1)


def test_scheduled_sweep_erases_old_content_and_chain_verifies(
    server_factory: ServerFactory, store_db: str
) -> None:
    server = server_factory(db=store_db, env=FAST)
    tag = uuid.uuid4().hex[:6]
    short, other = f"short-{tag}", f"other-{tag}"
    with httpx.Client(base_url=server.url, headers=server.headers(), timeout=30) as client:
        old = write(client, short, [ago(days=3), ago(days=2, hours=1), ago(days=2)], "s-old")
        mid = write(client, short, [ago(hours=30)] * 4, "s-mid")
        new = write(client, short, [ago(minutes=5), ago(minutes=1)], "s-new")
        other_ids = write(client, other, [ago(days=3), ago(hours=30), ago(minutes=1)], "s-other")
        # the default keeps 1 day; the agent's own policy keeps 36 hours... for `short` 1 day
        # is not what applies: its own 40h window erases only `old`
        assert set_keep(client, None, "1d").status_code == 200
        response = set_keep(client, short, "40h")
        assert response.status_code == 200, response.text
        assert response.json()["keep"] == "40h" and response.json()["agent"] == short

        wait_for(lambda: all(erased(client, e) for e in old + other_ids[:2]))
        time.sleep(1.0)  # more sweeps: idempotent, nothing newer is touched
        assert not any(erased(client, e) for e in mid + new)
        assert not erased(client, other_ids[2])
        tombstone = client.get(f"/v1/events/{old[0]}").json()
        assert tombstone["data"] == {} and tombstone["session_id"] == "s-old"
        for agent, count in ((short, 3), (other, 2)):
            report = chain(client, agent)
            assert report["intact"] is True, report
            assert report["erased"] == count, report

        log = client.get("/v1/retention/log").json()["entries"]
        mine = {(e["agent"], e["rule"], e["keep"]): e for e in log if e["agent"] in (short, other)}
        assert set(mine) == {(short, "agent", "40h"), (other, "default", "1d")}
        entry = mine[(short, "agent", "40h")]
        assert entry["erased"] == 3 and entry["trigger"] == "schedule"
        assert entry["sessions"] == ["s-old"] and entry["oldest"] < entry["newest"]
        assert entry["started_at"] <= entry["finished_at"]
        assert sum(e["erased"] for e in log if e["agent"] == short) == 3  # never twice
        other_log = client.get("/v1/retention/log", params={"agent": other}).json()["entries"]
        assert {e["agent"] for e in other_log} == {other}


def test_dry_run_counts_and_changes_nothing(server_factory: ServerFactory, store_db: str) -> None:
    server = server_factory(db=store_db, env={"AGENTLEDGER_RETENTION_INTERVAL_S": "0"})
    agent = f"dry-{uuid.uuid4().hex[:6]}"
    with httpx.Client(base_url=server.url, headers=server.headers(), timeout=30) as client:
        old = write(client, agent, [ago(days=9), ago(days=8)], "s-a")
        old += write(client, agent, [ago(days=7, hours=12)], "s-b")
        new = write(client, agent, [ago(days=1)], "s-c")
        assert set_keep(client, agent, "7d").status_code == 200
        before = client.get("/v1/events/export", params={"agent": agent}).text

        dry = client.post("/v1/retention/run", json={"dry_run": True, "agent": agent})
        assert dry.status_code == 200, dry.text
        body = dry.json()
        assert body["dry_run"] is True and body["erased"] == 3 and body["run_id"] is None
        [entry] = body["agents"]
        assert entry["rule"] == "agent" and entry["keep"] == "7d"
        assert entry["sessions"] == ["s-a", "s-b"]
        assert entry["oldest"] < entry["newest"] < entry["cutoff"]
        assert client.get("/v1/events/export", params={"agent": agent}).text == before
        assert client.get("/v1/retention/log", params={"agent": agent}).json()["entries"] == []

        run = client.post("/v1/retention/run", json={"agent": agent}).json()
        assert run["erased"] == 3 and run["agents"][0]["oldest"] == entry["oldest"]
        assert all(erased(client, e) for e in old) and not erased(client, new[0])
        again = client.post("/v1/retention/run", json={"agent": agent}).json()
        assert again["erased"] == 0  # idempotent
        [logged] = client.get("/v1/retention/log", params={"agent": agent}).json()["entries"]
        assert logged["run_id"] == run["run_id"] and logged["trigger"] == "request"
        assert chain(client, agent)["intact"] is True
        # removing the policy stops the sweep for that agent
        assert client.delete(f"/v1/retention/policies/{agent}").json()["removed"] is True
        policies = client.get("/v1/retention/policies").json()
        assert agent not in {p["agent"] for p in policies["policies"]}


@POSTGRES_ONLY
def test_two_servers_on_one_postgres_erase_each_event_once(
    server_factory: ServerFactory, store_db: str
) -> None:
    env = {"AGENTLEDGER_RETENTION_INTERVAL_S": "0.2", "AGENTLEDGER_RETENTION_BATCH": "7"}
    first = server_factory(db=store_db, env=env)
    second = server_factory(db=store_db, env=env)
    agent = f"twin-{uuid.uuid4().hex[:6]}"
    with httpx.Client(base_url=first.url, headers=first.headers(), timeout=30) as client:
        old = write(client, agent, [ago(days=2, minutes=n) for n in range(120)], "s-old")
        keep = write(client, agent, [ago(minutes=1)], "s-new")
        response = set_keep(client, agent, "1d")
        assert response.status_code == 200, response.text
        with httpx.Client(base_url=second.url, headers=second.headers(), timeout=30) as other:
            # both processes run the scheduled sweep; manual runs race them as well
            for _ in range(3):
                assert other.post("/v1/retention/run", json={"agent": agent}).status_code == 200
        wait_for(lambda: chain(client, agent)["erased"] == len(old))
        time.sleep(0.6)
        log = client.get("/v1/retention/log", params={"agent": agent, "limit": 1000}).json()
        assert sum(e["erased"] for e in log["entries"]) == len(old)  # no event logged twice
        report = chain(client, agent)
        assert report["intact"] is True and report["erased"] == len(old), report
        assert not erased(client, keep[0])
