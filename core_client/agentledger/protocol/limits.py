"""Size and shape limits of the wire contract, shared by the client (checked before sending) and
the server (checked on every route).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "AGENT_PATTERN",
    "EDGE_KIND_PATTERN",
    "IMPACT_DEPTH_DEFAULT",
    "LINEAGE_DEPTH_MAX",
    "LINEAGE_LIMIT_DEFAULT",
    "LINEAGE_LIMIT_MAX",
    "MAX_AGENT_CHARS",
    "MAX_CAUSES",
    "MAX_EVENT_TYPE_CHARS",
    "MAX_SAFE_INTEGER",
    "MAX_SEQUENCE_NO",
    "MAX_SESSION_CHARS",
    "NO_NUL_PATTERN",
    "WHY_DEPTH_DEFAULT",
]

#: An agent name: a letter or digit, then letters, digits, ``.``, ``_`` or ``-``; 255 at most.
AGENT_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$"
MAX_AGENT_CHARS: Final = 255
#: An event type such as ``tool_call`` (or a custom name).
MAX_EVENT_TYPE_CHARS: Final = 255
#: A session id.
MAX_SESSION_CHARS: Final = 255
#: Strings stored in indexed columns may not hold NUL (PostgreSQL text cannot).
NO_NUL_PATTERN: Final = r"^[^\x00]*$"

#: Integers inside ``data`` and ``metadata``: within ±(2**53 - 1), the range every JSON reader
#: and RFC 8785 keep exact (I-JSON); larger ones are refused, to be sent as strings.
MAX_SAFE_INTEGER: Final = 2**53 - 1
#: The largest ``sequence_no`` a cursor or ``after_seq`` may name: the column is a 32-bit
#: ``integer`` on PostgreSQL, and the rule is the same on every store.
MAX_SEQUENCE_NO: Final = 2**31 - 1

#: Further causes one event may name in ``caused_by`` (besides ``parent_id``).
MAX_CAUSES: Final = 32
#: An edge kind: lowercase letters, digits and ``_``, starting with a letter; 32 at most.
EDGE_KIND_PATTERN: Final = r"^[a-z][a-z0-9_]{0,31}$"

# Lineage bounds, the same on every surface (API, Python client, CLI, dashboard, MCP tools).
#: ``why()``: cause hops followed back from the event, by default and at most.
WHY_DEPTH_DEFAULT: Final = 1_000
#: ``impact()``: effect hops followed forward from the event, by default.
IMPACT_DEPTH_DEFAULT: Final = 1_000
#: The most hops either walk may be asked to follow.
LINEAGE_DEPTH_MAX: Final = 10_000
#: Events one ``why()`` or ``impact()`` answer holds, by default and at most.
LINEAGE_LIMIT_DEFAULT: Final = 10_000
LINEAGE_LIMIT_MAX: Final = 100_000
