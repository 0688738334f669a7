"""Options shared by the ``agentledger`` commands, for commands defined elsewhere to reuse.

``--url``, ``--api-key`` and ``--agent`` fall back to the client's environment variables
(``AGENTLEDGER_URL``, ``AGENTLEDGER_API_KEY``, ``AGENTLEDGER_AGENT``) when not given.
"""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["AgentOpt", "JsonOpt", "KeyOpt", "UrlOpt"]

UrlOpt = Annotated[
    str | None, typer.Option("--url", help="Server URL (env AGENTLEDGER_URL).", show_default=False)
]
KeyOpt = Annotated[
    str | None,
    typer.Option("--api-key", help="API key (env AGENTLEDGER_API_KEY).", show_default=False),
]
AgentOpt = Annotated[
    str | None, typer.Option("--agent", help="Agent (env AGENTLEDGER_AGENT).", show_default=False)
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of rich output.")]
