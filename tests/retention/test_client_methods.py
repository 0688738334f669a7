"""The retention methods of ``Ledger`` and ``AsyncLedger`` on a real ``agentledger serve``
(docs/pages/retention.md, "From Python"): set, list, dry run, run, log and unset, typed
answers, and the errors a bad window, an unknown agent and a read-only key raise."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest

from _servers import ServerFactory
from agentledger.client import (
    AsyncLedger,
    Ledger,
    NotFoundError,
    PermissionDeniedError,
    RetentionPolicy,
    UnprocessableEntityError,
)

from ._helpers import ago, chain, write

OFF = {"AGENTLEDGER_RETENTION_INTERVAL_S": "0"}


def test_sync_client_sets_runs_and_reports_retention(
    server_factory: ServerFactory, store_db: str
) -> None:
    server = server_factory(db=store_db, env=OFF)
    agent = f"py-{uuid.uuid4().hex[:6]}"
    with httpx.Client(base_url=server.url, headers=server.headers(), timeout=30) as http:
        old = write(http, agent, [ago(days=3), ago(days=2)], "s-old")
        write(http, agent, [ago(minutes=1)], "s-new")
        with Ledger(url=server.url, api_key=server.api_key, spill_dir=None) as ledger:
            policy = ledger.set_retention("1d", agent=agent)
            assert policy == RetentionPolicy(
                agent=agent, keep="1d", keep_seconds=86_400, updated_at=policy.updated_at
            )
            default = ledger.set_retention("30d")
            assert default.agent is None and default.keep_seconds == 30 * 86_400
            listed = ledger.retention_policies()
            assert listed.default == default
            assert [p.agent for p in listed.policies] == [agent]

            dry = ledger.run_retention(dry_run=True, agent=agent)
            assert dry.dry_run and dry.run_id is None and dry.erased == len(old)
            [entry] = dry.agents
            assert (entry.agent, entry.rule, entry.keep, entry.sessions) == (
                agent, "agent", "1d", ["s-old"],
            )  # fmt: skip
            assert ledger.retention_log(agent=agent) == []  # a dry run logs nothing

            done = ledger.run_retention(agent=agent)
            assert not done.dry_run and done.run_id and done.erased == len(old)
            assert chain(http, agent)["intact"] and chain(http, agent)["erased"] == len(old)
            [logged] = ledger.retention_log(agent=agent)
            assert (logged.run_id, logged.erased, logged.rule) == (done.run_id, 2, "agent")
            assert logged.finished_at and logged.sessions == ["s-old"]

            assert ledger.unset_retention(agent=agent) is True
            assert ledger.unset_retention(agent=agent) is False
            assert ledger.unset_retention() is True
            assert ledger.retention_policies().default is None


def test_retention_errors_are_typed(server_factory: ServerFactory) -> None:
    server = server_factory(env=OFF)
    agent = f"err-{uuid.uuid4().hex[:6]}"
    with httpx.Client(base_url=server.url, headers=server.headers(), timeout=30) as http:
        write(http, agent, [ago(minutes=1)], "s")
        created = http.post("/v1/keys", json={"name": "reader", "scope": "read_only"})
        assert created.status_code in (200, 201), created.text
        reader_key = created.json()["key"]
    with Ledger(url=server.url, api_key=server.api_key, spill_dir=None) as ledger:
        with pytest.raises(UnprocessableEntityError, match="keep"):
            ledger.set_retention("30x", agent=agent)
        with pytest.raises(NotFoundError, match="agent"):
            ledger.set_retention("1d", agent="nobody-stored-here")
        with pytest.raises(NotFoundError):
            ledger.run_retention(agent="nobody-stored-here")
    with Ledger(url=server.url, api_key=reader_key, spill_dir=None) as reader:
        with pytest.raises(PermissionDeniedError):
            reader.retention_policies()
        with pytest.raises(PermissionDeniedError):
            reader.set_retention("1d", agent=agent)


def test_async_client_has_the_same_methods(server_factory: ServerFactory) -> None:
    server = server_factory(env=OFF)
    agent = f"aio-{uuid.uuid4().hex[:6]}"
    with httpx.Client(base_url=server.url, headers=server.headers(), timeout=30) as http:
        write(http, agent, [ago(days=2)], "s-old")

    async def main() -> None:
        async with AsyncLedger(url=server.url, api_key=server.api_key, spill_dir=None) as ledger:
            assert (await ledger.set_retention("1h", agent=agent)).keep == "1h"
            run = await ledger.run_retention(agent=agent)
            assert run.erased == 1
            [entry] = await ledger.retention_log(agent=agent, limit=5)
            assert entry.run_id == run.run_id
            assert await ledger.unset_retention(agent=agent) is True

    asyncio.run(main())
