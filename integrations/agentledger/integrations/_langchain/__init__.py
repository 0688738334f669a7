"""Private parts of :mod:`agentledger.integrations.langchain` (values, usage, run table)."""

__all__: list[str] = []
