"""Old private path of :mod:`agentledger.testing`, kept until the benchmarks import it from
there; nothing in the package uses it."""

from __future__ import annotations

from agentledger.testing import (
    SERVER_START_TIMEOUT_S,
    EmbeddedServer,
    EmbeddedServerError,
    free_port,
)

__all__ = ["SERVER_START_TIMEOUT_S", "EmbeddedServer", "EmbeddedServerError", "free_port"]
