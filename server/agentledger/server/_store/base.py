"""The store interface every backend implements (SQLite and PostgreSQL).

Routes talk only to :class:`LedgerStore`. A backend owns its schema and migrations, the
serialized write path (per-agent gapless ``sequence_no`` and chain links assigned inside one
transaction), and the recursive lineage queries. Events cross this boundary as plain dicts in
wire shape (see ``EventOut`` in ``_schemas``) or as pre-serialized JSON bytes for streaming.
Query features are built over a store, not into it (``docs/design/server-store.md``).
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentledger.server._chain import ChainHasher, ChainRow, ChainRowTuple
from agentledger.server._chain_head import AgentHead, ChainSnapshot
from agentledger.server._ingest import PreparedEvent
from agentledger.server._store._inline import WouldBlock

__all__ = ["AppendOutcome", "KeyRecord", "LedgerStore", "Lineage", "WouldBlock"]


@dataclass(slots=True)
class AppendOutcome:
    """The outcome of one item of :meth:`LedgerStore.append`.

    ``status`` is 201 (written), 200 (duplicate), or an error status (409 conflict, 422 bad
    ``parent_index``) with ``error`` naming the field.
    """

    ok: bool
    status: int
    event_id: str | None = None
    sequence_no: int | None = None
    timestamp: str | None = None
    checksum: str | None = None
    chain_hash: str | None = None
    duplicate: bool = False
    error: str | None = None


@dataclass(slots=True)
class Lineage:
    """A causal DAG around one event.

    ``events`` are wire-shaped (dicts or ``orjson.Fragment``), causes before effects; for
    ``why`` the asked event is last, for ``impact`` it is left out. ``edges`` are
    ``{"effect", "cause", "kind"}``; ``cut_at`` names events whose further edges were not
    followed because a bound was reached.
    """

    events: list[Any]
    edges: list[dict[str, str]]
    anchor_agent: str
    roots: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    cut_at: list[str] = field(default_factory=list)
    depth_truncated: bool = False
    size_truncated: bool = False
    scoped_agent_limited: bool = False


@dataclass(slots=True)
class KeyRecord:
    """An API key as stored: only the SHA-256 of the secret."""

    key_id: str
    name: str
    key_hash: str
    prefix: str
    agent: str | None
    scope: str
    created_at: str
    expires_at: str | None
    revoked_at: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class LedgerStore(abc.ABC):
    """A ledger backend. All methods are synchronous and thread-safe.

    Routes run them in the server's thread pool; a backend serializes its own writers.
    """

    hasher: ChainHasher

    # -- lifecycle ---------------------------------------------------------------------------

    @abc.abstractmethod
    def close(self) -> None:
        """Release connections."""

    @abc.abstractmethod
    def ping(self) -> None:
        """Raise if the database cannot answer (used by ``/health``)."""

    # -- writes ------------------------------------------------------------------------------

    @abc.abstractmethod
    def append(
        self,
        items: Sequence[PreparedEvent],
        *,
        keep_received_at: Sequence[str | None] = (),
        reader_agent: str | None = None,
    ) -> list[AppendOutcome]:
        """Write items in order, one transaction, each either fully written or not at all.

        A client ``event_id`` or ``(agent, idempotency_key)`` seen before returns the stored
        event (``duplicate``) when the fingerprint matches, else a 409 outcome. A
        ``parent_index`` names an earlier item; it must have succeeded. Causes (``parent_id``
        and ``caused_by``) that would make an event its own ancestor are refused (422).

        Args:
            items: prepared events (see :func:`agentledger.server._ingest.prepare`).
            keep_received_at: per item, a ``received_at`` to store instead of the clock
                (import keeps the original); empty means the clock for all.
            reader_agent: the agent the writing key is bound to, if any: a cause or
                ``supersedes`` that is not a stored event of that agent (or an earlier item)
                is refused (422) with the same message whether another agent stores it or
                nobody does. For any key, ``supersedes`` naming another agent's event is a
                422.
        """

    # -- reads -------------------------------------------------------------------------------

    @abc.abstractmethod
    def get_event(self, event_id: str) -> dict[str, Any] | None:
        """One event in wire shape, or ``None``."""

    def get_event_inline(self, event_id: str) -> dict[str, Any] | None:
        """:meth:`get_event` answered at once on the calling thread, for a store whose point
        read never waits (SQLite: the event loop reads it instead of handing it to a worker
        thread, which costs more than the query).

        Raises:
            WouldBlock: this store cannot read without waiting (the default), or not now (a
                lock is held), or not this event (a large record): call :meth:`get_event` in
                a worker thread.
        """
        raise WouldBlock(f"{type(self).__name__} reads in worker threads")

    @abc.abstractmethod
    def list_events(
        self,
        agent: str,
        *,
        limit: int,
        offset: int = 0,
        before: str | None = None,
        after: str | None = None,
        event_type: str | None = None,
        session_id: str | None = None,
        cursor: tuple[str, int] | None = None,
    ) -> list[Any]:
        """Newest first by ``(timestamp, sequence_no)``; ``cursor`` excludes rows not older.

        Events are wire-shaped dicts or ``orjson.Fragment`` (pre-serialized JSON of the same
        shape, spliced from the stored bytes); routes serialize them with orjson either way."""

    @abc.abstractmethod
    def why(
        self, event_id: str, *, depth: int, limit: int, agent_scope: str | None
    ) -> Lineage | None:
        """The causal ancestry of an event (``parent_id`` and ``caused_by`` edges) as a DAG,
        root causes first, by one recursive query; ``None`` if the event is unknown.

        ``depth`` bounds the cause hops followed, ``limit`` the events returned. With
        ``agent_scope`` only edges written by that agent's events are followed and causes under
        another agent are reported as missing.
        """

    @abc.abstractmethod
    def impact(
        self, event_id: str, *, depth: int, limit: int, agent_scope: str | None
    ) -> Lineage | None:
        """Every causal descendant as a DAG, causes first (the mirror of :meth:`why`);
        ``None`` if the event is unknown."""

    @abc.abstractmethod
    def sessions(
        self, agent: str | None, *, limit: int, agent_scope: str | None = None
    ) -> list[dict[str, Any]]:
        """Sessions (those ``agent`` wrote in, when given), most recently ended first.

        With ``agent_scope`` (a key bound to that agent) a session's counts, event types,
        times and agents cover only that agent's events, so a session shared with other
        agents tells nothing of them."""

    @abc.abstractmethod
    def session_events(self, session_id: str, *, agent: str | None, limit: int) -> list[Any]:
        """Events of a session, oldest first (replay); dicts or ``orjson.Fragment``."""

    @abc.abstractmethod
    def agents(self, *, agent: str | None = None) -> list[dict[str, Any]]:
        """``[{agent, first_seen, last_seen, event_count}]``; one agent when given."""

    @abc.abstractmethod
    def export_lines(self, agent: str, *, page_size: int = 2000) -> Iterator[bytes]:
        """NDJSON lines (with trailing newline), oldest first, in bounded memory."""

    # -- chain -------------------------------------------------------------------------------

    @abc.abstractmethod
    def chain_rows(self, agent: str, *, after_seq: int = 0) -> Iterator[ChainRowTuple]:
        """Stored rows of ``agent`` with ``sequence_no > after_seq``, ascending.

        Rows are :class:`ChainRow` or plain tuples in its field order (the hot path of verify,
        >= 100,000 rows/s, so backends may hand out driver tuples as they come).
        """

    @abc.abstractmethod
    def edge_rows(self, agent: str, *, after_seq: int = 0) -> Iterator[tuple[int, str, str, str]]:
        """``(sequence_no, cause_id, kind, edge agent)`` of the stored causal edges of the
        agent's events with ``sequence_no > after_seq``, ascending by sequence number (what
        verification compares with the edges each record defines)."""

    @abc.abstractmethod
    def chain_head(self, agent: str) -> AgentHead | None:
        """The agent's ``agents`` row as recorded by the writer (last sequence number and
        chain hash, counters) with the earliest and latest stored event timestamps, or
        ``None``."""

    @abc.abstractmethod
    def chain_snapshot(
        self, agent: str, *, after_seq: int = 0
    ) -> contextlib.AbstractContextManager[ChainSnapshot]:
        """:meth:`chain_head`, :meth:`chain_rows` and :meth:`edge_rows` read in one read
        transaction, the head first, so writes that land meanwhile are not seen by any of them
        (what verification of a live agent needs). The rows and edges are consumed inside the
        ``with`` block."""

    @abc.abstractmethod
    def chain_row_at(self, agent: str, sequence_no: int) -> ChainRow | None:
        """The row at ``sequence_no``."""

    @abc.abstractmethod
    def chain_row_by_hash(self, agent: str, chain_hash: str) -> ChainRow | None:
        """The row whose stored link is ``chain_hash``."""

    # -- keys --------------------------------------------------------------------------------

    @abc.abstractmethod
    def create_key(self, key: KeyRecord) -> None:
        """Store a new key."""

    @abc.abstractmethod
    def key_by_hash(self, key_hash: str) -> KeyRecord | None:
        """Look a key up by the SHA-256 of its secret."""

    def key_by_hash_inline(self, key_hash: str) -> KeyRecord | None:
        """:meth:`key_by_hash` answered at once on the calling thread (see
        :meth:`get_event_inline`).

        Raises:
            WouldBlock: not on this store (the default), or not now.
        """
        raise WouldBlock(f"{type(self).__name__} reads in worker threads")

    @abc.abstractmethod
    def list_keys(self) -> list[KeyRecord]:
        """Every key, revoked ones included."""

    @abc.abstractmethod
    def revoke_key(self, key_id: str, *, at: str) -> bool:
        """Revoke; ``False`` when no such active key."""

    @abc.abstractmethod
    def count_active_keys(self) -> int:
        """Keys neither revoked nor expired (decides whether a non-loopback bind may start)."""
