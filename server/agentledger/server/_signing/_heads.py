"""Signing chain heads: read an agent's head (checked against its last row), sign it with the
active key, store it in ``signed_heads`` and publish it; the background loop signs every agent
whose head moved. Design: ``docs/design/evidence.md``.

Several server processes on one PostgreSQL database: each round of the loop first takes a
transaction-scoped advisory lock (``pg_try_advisory_xact_lock``); a process that does not get
it skips the round (another one is signing), and the agents to sign are read after taking the
lock, so a head is signed once per move, not once per process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import and_, insert, select, text
from sqlalchemy.exc import DBAPIError
from starlette.concurrency import run_in_threadpool

from agentledger.protocol.errors import LedgerError
from agentledger.protocol.signed_heads import head_payload
from agentledger.server._signing._keyring import Keyring, KeyringError
from agentledger.server._signing._publish import HeadPublisher
from agentledger.server._store._sql import SQLStore
from agentledger.server._tables import agents, signed_heads

__all__ = ["SIGN_LOCK_KEY", "HeadSigner", "SigningRefused"]

logger = logging.getLogger("agentledger.server")

#: The advisory lock key of a signing round on PostgreSQL (any fixed 64-bit number).
SIGN_LOCK_KEY = 0x616C_7369_676E  # "alsign"


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
    """Signs and stores heads of ``store`` with ``keyring``; ``publisher`` sends them out.

    Args:
        keyring: the keys, or a function opening them on first use (the server's key file
            is only created once there is something to sign or a key is asked for).
    """

    def __init__(
        self,
        store: SQLStore,
        keyring: Keyring | Callable[[], Keyring],
        publisher: HeadPublisher,
    ) -> None:
        self.store = store
        self._keyring = keyring
        self.publisher = publisher
        #: rounds of :meth:`run` finished (tests and the log read it)
        self.rounds = 0

    @property
    def keyring(self) -> Keyring:
        """The keyring, opened on first use.

        Raises:
            KeyringError: the key file cannot be used.
        """
        if not isinstance(self._keyring, Keyring):
            self._keyring = self._keyring()
        return self._keyring

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
        keyring = self.keyring
        keyring.refresh()  # a rotation by another process: sign with (and name) the new key
        signed: dict[str, Any] = {
            "agent": agent,
            "sequence_no": head.last_seq,
            "chain_hash": head.last_hash,
            "signed_at": datetime.now(UTC)
            .isoformat(timespec="microseconds")
            .replace("+00:00", "Z"),
            "key_id": keyring.active_id,
            "hmac_links": self.store.hasher.keyed,
        }
        key_id, signature = keyring.sign(head_payload(signed))
        if key_id != signed["key_id"]:  # rotated between the two reads: sign again
            signed["key_id"] = key_id
            key_id, signature = keyring.sign(head_payload(signed))
        signed["signature"] = signature
        with self.store.writer() as conn:
            conn.execute(
                insert(signed_heads).values({**signed, "hmac_links": int(signed["hmac_links"])})
            )
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

    def first_covering(self, agent: str, sequence_no: int) -> dict[str, Any] | None:
        """The agent's earliest stored head at or after ``sequence_no`` that the active key
        signed; ``None`` when there is none (call :meth:`sign`)."""
        query = (
            select(signed_heads)
            .where(
                signed_heads.c.agent == agent,
                signed_heads.c.sequence_no >= sequence_no,
                signed_heads.c.key_id == self.keyring.active_id,
            )
            .order_by(signed_heads.c.sequence_no, signed_heads.c.id)
            .limit(1)
        )
        with self.store.reader() as conn:
            found = conn.execute(query).first()
        return _row_head(found) if found is not None else None

    def unsigned(self) -> list[str]:
        """The agents whose current head has no signature yet (one query)."""
        signed = (
            select(signed_heads.c.id)
            .where(
                and_(
                    signed_heads.c.agent == agents.c.agent,
                    signed_heads.c.sequence_no == agents.c.last_seq,
                    signed_heads.c.chain_hash == agents.c.last_hash,
                )
            )
            .exists()
        )
        query = select(agents.c.agent).where(agents.c.last_seq > 0, ~signed)
        with self.store.reader() as conn:
            return sorted(row[0] for row in conn.execute(query))

    @contextlib.contextmanager
    def _round_lock(self) -> Iterator[bool]:
        """``True`` when this process may sign now: always on SQLite; on PostgreSQL while it
        holds the round's advisory lock (released when the block ends)."""
        if self.store.engine.dialect.name != "postgresql":
            yield True
            return
        with self.store.engine.begin() as conn:
            got = conn.execute(
                text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": SIGN_LOCK_KEY}
            ).scalar_one()
            yield bool(got)

    def sign_changed(self) -> int:
        """Sign every agent whose head moved since its last signature; returns how many
        (0 when another process holds the round's lock)."""
        count = 0
        with self._round_lock() as mine:
            if not mine:
                return 0
            for agent in self.unsigned():
                try:
                    self.sign(agent)
                    count += 1
                except SigningRefused as refusal:
                    logger.warning("signed heads: %s", refusal)
        return count

    async def run(self, interval_s: float) -> None:
        """Sign changed heads every ``interval_s`` until cancelled; a cancel waits for the
        round in progress. A key file that cannot be used or a busy database is logged and
        tried again next round."""
        while True:
            await asyncio.sleep(interval_s)
            try:
                await run_in_threadpool(self.sign_changed)
            except KeyringError as error:
                logger.warning("signed heads: not signing: %s", error)
            except DBAPIError as error:
                logger.warning("signed heads: round failed, retrying next period: %s", error)
            except Exception:
                logger.exception("signed heads: the background signer failed; retrying")
            self.rounds += 1
