"""The ``agentledger demo``: a LangChain support agent logged to a ledger, then explained.

:func:`run_demo` runs it end to end (``docs/design/demo.md``); :func:`build_support_agent`,
:func:`support_tools` and :func:`chat_model` are its parts, reusable in a notebook.
"""

from __future__ import annotations

from agentledger.demo._run import DemoError, run_demo
from agentledger.demo._support_agent import (
    CUSTOMER_MESSAGE,
    SCRIPTED_MODEL_NAME,
    build_support_agent,
    chat_model,
    next_support_reply,
    support_tools,
)

__all__ = [
    "CUSTOMER_MESSAGE",
    "SCRIPTED_MODEL_NAME",
    "DemoError",
    "build_support_agent",
    "chat_model",
    "next_support_reply",
    "run_demo",
    "support_tools",
]
