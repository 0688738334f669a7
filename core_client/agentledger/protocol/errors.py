"""The root of every exception agentledger raises.

The client's HTTP errors, the server's configuration and store errors, the integrations' errors
and the regression-case errors all derive from :class:`LedgerError`, so ``except LedgerError``
catches anything the library raises on purpose.
"""

from __future__ import annotations

__all__ = ["LedgerError"]


class LedgerError(Exception):
    """Base class of every exception raised by agentledger."""
