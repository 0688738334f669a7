"""What the client, the server and the integrations agree on, importable by all three.

* :mod:`agentledger.protocol.vocabulary`: the event names every integration emits.
* :mod:`agentledger.protocol.redaction`: the secret-key and pattern table, applied by the client
  before events leave the process and by the server before hashing.
* :mod:`agentledger.protocol.limits`: size and shape limits of the wire contract.
* :mod:`agentledger.protocol.tree`: depths of events in a parent tree, for indented timelines.
* :class:`LedgerError`: the root of every exception agentledger raises.

This package imports nothing from the rest of agentledger.
"""

from __future__ import annotations

from agentledger.protocol import limits, redaction, tree, vocabulary
from agentledger.protocol.errors import LedgerError

__all__ = ["LedgerError", "limits", "redaction", "tree", "vocabulary"]
