"""SQLAlchemy Core tables shared by the SQL stores (the migrations create exactly these)."""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from agentledger.protocol.limits import MAX_AGENT_CHARS, MAX_EVENT_TYPE_CHARS, MAX_SESSION_CHARS

__all__ = [
    "agents",
    "api_keys",
    "event_causes",
    "event_embeddings",
    "events",
    "ledger_meta",
    "metadata",
    "otlp_spans",
    "signed_heads",
]

metadata = MetaData()

#: One row per event. ``record`` is the canonical JSON (RFC 8785) that the checksum and chain
#: hash cover; the other columns index it. A forget tombstone keeps ``sequence_no`` and
#: ``chain_hash``, sets ``record``/``checksum`` to NULL and holds its erasure mark in
#: ``fingerprint`` (``ChainHasher.erasure_mark``). ``seal`` covers ``received_at`` and
#: ``importance`` (``ChainHasher.column_seal``, migration 0006).
events = Table(
    "events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("event_id", String(36), nullable=False, unique=True),
    Column("agent", String(MAX_AGENT_CHARS), nullable=False),
    Column("sequence_no", Integer, nullable=False),
    Column("timestamp", String(32), nullable=False),
    Column("received_at", String(32), nullable=False),
    Column("event", String(MAX_EVENT_TYPE_CHARS), nullable=True),
    Column("parent_id", String(36), nullable=True),
    Column("session_id", String(MAX_SESSION_CHARS), nullable=True),
    Column("supersedes", String(36), nullable=True),
    Column("importance", Float, nullable=True),
    Column("idempotency_key", String(255), nullable=True),
    Column("fingerprint", String(64), nullable=True),
    Column("record", LargeBinary, nullable=True),
    Column("checksum", String(64), nullable=True),
    Column("chain_hash", String(64), nullable=False),
    Column("seal", String(64), nullable=True),
    UniqueConstraint("agent", "sequence_no", name="uq_events_agent_seq"),
    UniqueConstraint("agent", "idempotency_key", name="uq_events_agent_idem"),
    Index("ix_events_parent", "parent_id"),
    Index("ix_events_agent_ts", "agent", "timestamp", "sequence_no"),
    Index("ix_events_session_ts", "session_id", "timestamp"),
    Index("ix_events_supersedes", "supersedes"),
)

#: One row per causal edge: ``effect_id`` was computed from ``cause_id``'s output. The parent
#: edge and every ``caused_by`` entry of an event are written with it, derived from its record
#: (so the chain covers them); ``agent`` is the effect's agent. ``why()`` walks the primary key,
#: ``impact()`` the cause index. ``cause_id`` may name an event that is not stored (yet).
event_causes = Table(
    "event_causes",
    metadata,
    Column("effect_id", String(36), primary_key=True),
    Column("cause_id", String(36), primary_key=True),
    Column("kind", String(32), nullable=False),
    Column("agent", String(MAX_AGENT_CHARS), nullable=False),
    Index("ix_event_causes_cause", "cause_id"),
    sqlite_with_rowid=False,
)

#: Per-agent chain head and counters, updated in the same transaction as the events.
agents = Table(
    "agents",
    metadata,
    Column("agent", String(MAX_AGENT_CHARS), primary_key=True),
    Column("last_seq", Integer, nullable=False),
    Column("last_hash", String(64), nullable=False),
    Column("event_count", Integer, nullable=False),
    Column("first_seen", String(32), nullable=False),
    Column("last_seen", String(32), nullable=False),
)

#: API keys: only the SHA-256 of the secret is stored.
api_keys = Table(
    "api_keys",
    metadata,
    Column("key_id", String(64), primary_key=True),
    Column("name", String(255), nullable=False),
    Column("key_hash", String(64), nullable=False, unique=True),
    Column("prefix", String(16), nullable=False),
    Column("agent", String(MAX_AGENT_CHARS), nullable=True),
    Column("scope", String(16), nullable=False),
    Column("created_at", String(32), nullable=False),
    Column("expires_at", String(32), nullable=True),
    Column("revoked_at", String(32), nullable=True),
)

#: Server facts that must not change silently (e.g. the chain mode).
ledger_meta = Table(
    "ledger_meta",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

#: One embedding vector per event (float32 little-endian bytes), written by the background
#: embedding worker; forget deletes an event's row in its own transaction.
event_embeddings = Table(
    "event_embeddings",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("agent", String(MAX_AGENT_CHARS), nullable=False),
    Column("model", String(255), nullable=False),
    Column("dim", Integer, nullable=False),
    Column("vector", LargeBinary, nullable=False),
    Index("ix_event_embeddings_agent", "agent"),
)


#: Signed chain heads (``_signing``): an Ed25519 signature by the server's signing key over an
#: agent's ``(sequence_no, chain_hash)`` at a time. Design: ``docs/design/evidence.md``.
signed_heads = Table(
    "signed_heads",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("agent", String(MAX_AGENT_CHARS), nullable=False),
    Column("sequence_no", Integer, nullable=False),
    Column("chain_hash", String(64), nullable=False),
    Column("signed_at", String(32), nullable=False),
    Column("key_id", String(64), nullable=False),
    Column("hmac_links", Integer, nullable=False),
    Column("signature", String(128), nullable=False),
    Index("ix_signed_heads_agent_seq", "agent", "sequence_no"),
)


#: OpenTelemetry spans received on ``POST /v1/traces`` (decoded, as JSON), keyed by trace and
#: span id. A span waits here (``materialised`` 0) until its trace's root span has arrived or
#: it is older than the pending bound; then its events are written in the same transaction and
#: ``materialised`` becomes 1. The rows stay, so a span arriving later is linked against the
#: whole trace and a re-sent span is recognised (design: ``docs/design/server-otlp.md``).
otlp_spans = Table(
    "otlp_spans",
    metadata,
    Column("trace_id", String(32), primary_key=True),
    Column("span_id", String(16), primary_key=True),
    Column("parent_span_id", String(16), nullable=True),
    Column("received_at", String(32), nullable=False),
    Column("materialised", Integer, nullable=False),
    Column("span", LargeBinary, nullable=False),
    Index("ix_otlp_spans_pending", "materialised", "received_at"),
)
