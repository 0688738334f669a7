"""Forget's second half: session ids that name the forgotten value get a pseudonym.

A session id such as ``chat-alice@example.com`` is personal data on every event of the session,
erased or not. Forget renames the session on all of them (the same pseudonym everywhere, so the
session stays one session) inside the forget's transaction:

* an erased event (tombstone) keeps its link; its erasure mark is recomputed over the new id;
* a live event's record is rewritten with the new id (also where the old id appears as a whole
  string value inside ``data`` or ``metadata``); the row keeps its ``chain_hash`` and carries an
  amendment mark (:meth:`~agentledger.server._chain.ChainHasher.amendment_mark`), which
  ``verify`` accepts in place of the link and counts as ``amended``.

Design: ``docs/design/server-chain.md`` ("What the chain covers besides the record").
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from sqlalchemy import Connection, and_, bindparam, delete, or_, select, update

from agentledger.protocol.subjects import names_value
from agentledger.server._canonical import canonical_reference
from agentledger.server._chain import ChainHasher
from agentledger.server._query.forget import SEARCHED
from agentledger.server._search.base import SearchBackend
from agentledger.server._store._rows import IN_CHUNK
from agentledger.server._tables import event_embeddings, events

__all__ = ["SessionRenames", "find_sessions", "rename_sessions"]


@dataclass(slots=True)
class SessionRenames:
    """The sessions a forget renames: ``{old id: pseudonym}`` and the agents holding each."""

    names: dict[str, str] = field(default_factory=dict)
    agents: dict[str, set[str]] = field(default_factory=dict)

    def new_id(self, agent: str, session_id: str | None) -> str | None:
        """The id a row of ``agent`` in ``session_id`` keeps after the forget."""
        if session_id is None or agent not in self.agents.get(session_id, ()):
            return session_id
        return self.names[session_id]


def _like_pattern(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def find_sessions(
    conn: Connection, hasher: ChainHasher, value: str, agents: Sequence[str] | None
) -> SessionRenames:
    """The sessions (of ``agents``, or of every agent) whose id names ``value``
    (:func:`~agentledger.protocol.subjects.names_value`), with their pseudonyms."""
    query = (
        select(events.c.agent, events.c.session_id)
        .where(events.c.session_id.like(_like_pattern(value), escape="\\"))
        .distinct()
    )
    if agents is not None:
        query = query.where(events.c.agent.in_(list(agents)))
    renames = SessionRenames()
    nonce = os.urandom(32)
    for agent, session_id in conn.execute(query):
        if session_id is None or not names_value(session_id, value):
            continue
        renames.names.setdefault(session_id, hasher.pseudonym(session_id, nonce))
        renames.agents.setdefault(session_id, set()).add(agent)
    return renames


def _replace_strings(value: Any, old: str, new: str) -> tuple[Any, bool]:
    """``value`` with every string equal to ``old`` replaced by ``new``; and whether any was."""
    if isinstance(value, str):
        return (new, True) if value == old else (value, False)
    if isinstance(value, dict):
        changed = False
        out: dict[str, Any] = {}
        for key, item in value.items():
            out[key], hit = _replace_strings(item, old, new)
            changed = changed or hit
        return out, changed
    if isinstance(value, list):
        pairs = [_replace_strings(item, old, new) for item in value]
        return [item for item, _ in pairs], any(hit for _, hit in pairs)
    return value, False


_ROW_COLUMNS = (
    events.c.id,
    events.c.event_id,
    events.c.agent,
    events.c.sequence_no,
    events.c.timestamp,
    events.c.event,
    events.c.parent_id,
    events.c.session_id,
    events.c.supersedes,
    events.c.record,
    events.c.chain_hash,
)


def rename_sessions(
    conn: Connection,
    hasher: ChainHasher,
    search: SearchBackend,
    renames: SessionRenames,
    *,
    skip: set[int],
    dry_run: bool,
) -> int:
    """Give every row of the renamed sessions its pseudonym (rows in ``skip``, erased by this
    forget, already have it); returns the live events rewritten (or that would be)."""
    if not renames.names:
        return 0
    pairs = [
        and_(events.c.session_id == old, events.c.agent.in_(sorted(renames.agents[old])))
        for old in renames.names
    ]
    tombstones: list[dict[str, Any]] = []
    amended: list[dict[str, Any]] = []
    data_changed: list[int] = []
    for row in conn.execute(select(*_ROW_COLUMNS).where(or_(*pairs))):
        row_id, event_id, agent, seq, timestamp, event, parent_id, old, supersedes = row[:9]
        record, chain = row[9], row[10]
        if row_id in skip:
            continue
        new = renames.names[old]
        if record is None:
            kept = (event_id, agent, seq, timestamp, event, parent_id, new, supersedes)
            mark = hasher.erasure_mark(chain, kept)
            tombstones.append({"row_id": row_id, "session": new, "mark": mark})
            continue
        rec = orjson.loads(record)
        rec["session_id"] = new
        for part in SEARCHED:
            if part in rec:
                rec[part], hit = _replace_strings(rec[part], old, new)
                if hit and part == "data":
                    data_changed.append(row_id)
        body = canonical_reference(rec)
        amended.append(
            {
                "row_id": row_id,
                "session": new,
                "record": body,
                "checksum": hasher.checksum(body),
                "mark": hasher.amendment_mark(chain, body),
            }
        )
    if dry_run:
        return len(amended)
    by_id = events.c.id == bindparam("row_id")
    if tombstones:
        conn.execute(
            update(events)
            .where(by_id)
            .values(session_id=bindparam("session"), fingerprint=bindparam("mark")),
            tombstones,
        )
    if amended:
        search.reindex_prepare(conn, data_changed)
        conn.execute(
            update(events)
            .where(by_id)
            .values(
                session_id=bindparam("session"),
                record=bindparam("record"),
                checksum=bindparam("checksum"),
                fingerprint=bindparam("mark"),
            ),
            amended,
        )
        search.reindex_finish(conn, data_changed)
        for start in range(0, len(data_changed), IN_CHUNK):
            chunk = data_changed[start : start + IN_CHUNK]
            conn.execute(delete(event_embeddings).where(event_embeddings.c.id.in_(chunk)))
    return len(amended)
