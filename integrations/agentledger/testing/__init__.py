"""Test helpers for code that logs to agentledger: a real server on loopback and an offline
chat model.

* :class:`EmbeddedServer`: ``agentledger serve`` as a child process with a one-time dev key
  (needs the ``server`` extra when started); :func:`free_port`.
* :class:`~agentledger.testing.chat_models.ScriptedChatModel`: a LangChain chat model that
  replays scripted replies (tool calls included) or answers through a function; it needs the
  ``langchain`` extra and is imported on first use, so this package imports without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentledger.testing._embedded import (
    SERVER_START_TIMEOUT_S,
    EmbeddedServer,
    EmbeddedServerError,
    free_port,
)

if TYPE_CHECKING:
    from agentledger.testing.chat_models import ScriptedChatModel

__all__ = [
    "SERVER_START_TIMEOUT_S",
    "EmbeddedServer",
    "EmbeddedServerError",
    "ScriptedChatModel",
    "free_port",
]


def __getattr__(name: str) -> Any:
    """:class:`ScriptedChatModel` on first use (it imports LangChain)."""
    if name != "ScriptedChatModel":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from agentledger.testing.chat_models import ScriptedChatModel

    globals()[name] = ScriptedChatModel
    return ScriptedChatModel
