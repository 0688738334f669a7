"""Private modules of :mod:`agentledger.integrations.cases` (regression cases, issue 8)."""

__all__: list[str] = []
