"""Signing chain heads: read an agent's head (checked against its last row), sign it with the
active key, store it in ``signed_heads`` and publish it; the background loop signs every agent
whose head moved. Design: ``docs/design/evidence.md``.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import insert, select
from starlette.concurrency import run_in_threadpool

from agentledger.protocol.errors import LedgerError
from agentledger.protocol.signed_heads import head_payload
from agentledger.server._signing._keyring import Keyring
from agentledger.server._signing._publish import HeadPublisher
from agentledger.server._store._sql import SQLStore
from agentledger.server._tables import signed_heads

__all__ = ["HeadSigner", "SigningRefused"]

logger = logging.getLogger("agentledger.server")


class SigningRefused(LedgerError, RuntimeError):
    """The agent has no events, or its head does not match its last stored row."""


def _row_head(row: Any) -> dict[str, Any]:
    return {
        "agent": row.agent,
        "sequence_no": row.sequence_no,
        "chain_hash": row.chain_hash,
        "signed_at": row.signed_at,
        "key_id": row.key_id,
        "hmac_links": bool(row.hmac_links),
        "signature": row.signature,
    }


class HeadSigner:
    """Signs and stores heads of ``store`` with ``keyring``; ``publisher`` sends them out."""

    def __init__(self, store: SQLStore, keyring: Keyring, publisher: HeadPublisher) -> None:
        self.store = store
        self.keyring = keyring
        self.publisher = publisher
        self._signed: dict[str, tuple[int, str]] = {}

    def sign(self, agent: str) -> dict[str, Any]:
        """Sign the agent's current head (a new row each call).

        Raises:
            SigningRefused: no events, or ``agents.last_hash`` is not the last row's link.
        """
        head = self.store.chain_head(agent)
        if head is None or head.last_seq == 0:
            raise SigningRefused(f"agent {agent!r} has no events to sign")
        row = self.store.chain_row_at(agent, head.last_seq)
        if row is None or row.chain_hash != head.last_hash:
            raise SigningRefused(
                f"agent {agent!r}: the head does not match event {head.last_seq}; "
                "run agentledger verify"
            )
        signed: dict[str, Any] = {
            "agent": agent,
            "sequence_no": head.last_seq,
            "chain_hash": head.last_hash,
            "signed_at": datetime.now(UTC)
            .isoformat(timespec="microseconds")
            .replace("+00:00", "Z"),
            "key_id": self.keyring.active_id,
            "hmac_links": self.store.hasher.keyed,
        }
        key_id, signature = self.keyring.sign(head_payload(signed))
        signed["key_id"] = key_id
        signed["signature"] = signature
        with self.store.writer() as conn:
            conn.execute(
                insert(signed_heads).values({**signed, "hmac_links": int(signed["hmac_links"])})
            )
        self._signed[agent] = (head.last_seq, head.last_hash)
        self.publisher.publish(signed)
        return signed

    def heads(self, agent: str, *, limit: int = 100) -> list[dict[str, Any]]:
        """The agent's stored signed heads, newest first."""
        query = (
            select(signed_heads)
            .where(signed_heads.c.agent == agent)
            .order_by(signed_heads.c.sequence_no.desc(), signed_heads.c.id.desc())
            .limit(limit)
        )
        with self.store.reader() as conn:
            return [_row_head(row) for row in conn.execute(query)]

    def sign_changed(self) -> int:
        """Sign every agent whose head moved since its last signature; returns how many."""
        count = 0
        for listed in self.store.agents():
            agent = listed["agent"]
            head = self.store.chain_head(agent)
            if head is None or head.last_seq == 0:
                continue
            if agent not in self._signed:
                latest = self.heads(agent, limit=1)
                if latest:
                    self._signed[agent] = (latest[0]["sequence_no"], latest[0]["chain_hash"])
            if self._signed.get(agent) == (head.last_seq, head.last_hash):
                continue
            try:
                self.sign(agent)
                count += 1
            except SigningRefused as refusal:
                logger.warning("signed heads: %s", refusal)
        return count

    async def run(self, interval_s: float) -> None:
        """Sign changed heads every ``interval_s`` until cancelled (errors are logged)."""
        while True:
            await asyncio.sleep(interval_s)
            try:
                await run_in_threadpool(self.sign_changed)
            except Exception:
                logger.exception("signed heads: the background signer failed; retrying")
