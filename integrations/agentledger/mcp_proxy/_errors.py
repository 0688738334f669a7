"""What the MCP proxy raises: :class:`McpProxyError` and its :class:`ChildStartError`."""

from __future__ import annotations

from collections.abc import Sequence

from agentledger.protocol import LedgerError

__all__ = ["ChildStartError", "McpProxyError"]


class McpProxyError(LedgerError):
    """Base of the errors the proxy raises."""


class ChildStartError(McpProxyError):
    """The MCP server command could not be started.

    Attributes:
        command: the command line that was tried.
        exit_code: what a shell would exit with: 127 (command not found) or 126 (found but
            not executable, or another start error).
        reason: short human-readable cause.
    """

    def __init__(self, command: Sequence[str], exit_code: int, reason: str) -> None:
        self.command = list(command)
        self.exit_code = exit_code
        self.reason = reason
        super().__init__(f"cannot start MCP server {self.command[0]!r}: {reason}")
