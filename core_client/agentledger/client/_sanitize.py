"""Former private path of :mod:`agentledger.client.sanitize`, kept only until the integrations
import the public module; then delete this file."""

from __future__ import annotations

from agentledger.client.sanitize import cut_string, jsonable

__all__ = ["cut_string", "jsonable"]
