"""The retention tables (created by migration 0008): one policy per agent plus the default,
and the erasure log the sweep writes in the same transaction as the tombstones."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Index, Integer, String, Table, Text

from agentledger.protocol.limits import MAX_AGENT_CHARS
from agentledger.server._tables import metadata

__all__ = ["DEFAULT_AGENT", "erasure_log", "retention_policies"]

#: The ``agent`` of the default policy: no agent name can be ``*`` (``AGENT_PATTERN``).
DEFAULT_AGENT = "*"

#: How long an agent's event content is kept (``keep_seconds``); ``*`` is the default.
retention_policies = Table(
    "retention_policies",
    metadata,
    Column("agent", String(MAX_AGENT_CHARS), primary_key=True),
    Column("keep_seconds", BigInteger, nullable=False),
    Column("updated_at", String(32), nullable=False),
)

#: One row per sweep batch that erased something: when, which agent, by which rule (``agent``
#: or ``default``) and window, how many events, the oldest and newest event time erased, and
#: the sessions those events belonged to (a JSON list, at most ``MAX_LOGGED_SESSIONS``).
erasure_log = Table(
    "erasure_log",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(32), nullable=False),
    Column("erased_at", String(32), nullable=False),
    Column("trigger", String(16), nullable=False),
    Column("agent", String(MAX_AGENT_CHARS), nullable=False),
    Column("rule", String(16), nullable=False),
    Column("keep_seconds", BigInteger, nullable=False),
    Column("cutoff", String(32), nullable=False),
    Column("erased", Integer, nullable=False),
    Column("oldest", String(32), nullable=False),
    Column("newest", String(32), nullable=False),
    Column("sessions", Text, nullable=False),
    Index("ix_erasure_log_agent", "agent", "id"),
    Index("ix_erasure_log_run", "run_id"),
)
