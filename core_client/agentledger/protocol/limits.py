"""Size and shape limits of the wire contract, shared by the client (checked before sending) and
the server (checked on every route).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "AGENT_PATTERN",
    "MAX_AGENT_CHARS",
    "MAX_EVENT_TYPE_CHARS",
    "MAX_SESSION_CHARS",
    "NO_NUL_PATTERN",
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
