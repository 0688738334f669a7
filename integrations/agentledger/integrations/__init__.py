"""Framework integrations, one module per framework (sentry-python's layout).

* ``agentledger.integrations.langchain``: ``LedgerCallbackHandler`` (extra ``langchain``)
* ``agentledger.integrations.crewai``: ``LedgerCrewListener`` (extra ``crewai``)
* ``agentledger.integrations.livekit``: ``LedgerSessionObserver`` (extra ``livekit``)

Each framework is imported at the top of its own module only; this package root imports none
of them, and importing a module whose framework is missing raises ``ImportError`` naming the
extra to install.
"""

__all__: list[str] = []
