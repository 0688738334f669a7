"""Query features: search, baselines and drift, state at a time, forget, memory.

:class:`~agentledger.server._query.queries.QueryStore` takes a core store (and its search
backend, :mod:`agentledger.server._search`); :mod:`.text`, :mod:`.forget`, :mod:`.state`,
:mod:`.drift` and :mod:`.memory` are pure logic without SQL. Design:
``docs/design/server-store.md`` and ``docs/design/server-search.md``.
"""
