"""Retention: per-agent windows after which event content is erased to forget's tombstones
by a background sweep, with a dry run and an erasure log. User docs:
``docs/pages/retention.md``; design: ``docs/design/retention.md``."""

from __future__ import annotations

from agentledger.server._retention._sweep import AgentSweep, SweepOutcome, sweep
from agentledger.server._retention._window import WindowError, format_window, parse_window

__all__ = ["AgentSweep", "SweepOutcome", "WindowError", "format_window", "parse_window", "sweep"]
