"""agentledger client: log agent events to a ledger server and ask it why().

The public surface is listed in ``__all__``; everything else lives in private ``_modules``.
"""

from __future__ import annotations

from agentledger.client import _vocabulary as vocabulary
from agentledger.client._guard import capture_internal_exceptions, guarded

__all__ = ["capture_internal_exceptions", "guarded", "vocabulary"]
