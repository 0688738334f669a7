"""Framework integrations, one package per framework, all of the same shape.

* ``agentledger.integrations.langchain``: ``LedgerCallbackHandler`` (extra ``langchain``)
* ``agentledger.integrations.crewai``: ``LedgerCrewListener`` (extra ``crewai``)
* ``agentledger.integrations.livekit``: ``LedgerSessionObserver`` (extra ``livekit``)
* ``agentledger.integrations.openai``: ``instrument_openai`` for the raw OpenAI SDK's clients
  (extra ``openai``)

Each package offers its framework-native object and ``instrument(target, ledger, **options)``
with the shared options ``session_id=``, ``metadata=`` and ``max_scopes=``. Each framework is
imported by its own package only; this package root imports none of them, and importing a
package whose framework is missing raises ``ImportError`` naming the extra to install.
``_shared`` holds what the packages share (the ledger protocol, tool names, option checks).
"""

__all__: list[str] = []
