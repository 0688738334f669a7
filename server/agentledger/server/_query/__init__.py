"""Query features (issue 3): search, baselines and drift, state at a time, forget, memory.

Layout (one module per concern):

* :mod:`._store`: :class:`~._store.QueryStore` (the interface routes use) and
  :class:`~._store.QueryStoreMixin`, its dialect-neutral SQLAlchemy Core implementation, mixed
  into :class:`~agentledger.server._store._sql.SQLStore`;
* :mod:`._sqlite`: the SQLite pieces (FTS5 ``MATCH``/``bm25``, the batch indexer, secure
  erasure) mixed into :class:`~agentledger.server._store.sqlite.SQLiteStore`;
* :mod:`.text`, :mod:`.forget`, :mod:`.state`, :mod:`.drift`, :mod:`.memory`: pure logic, no
  SQL; :mod:`.embeddings` and :mod:`.workers`: the OpenAI-compatible embeddings client and the
  background workers that drain un-indexed / un-embedded events.

For the PostgreSQL store (hooks to override, all on ``QueryStoreMixin``):

* ``_keyword_search(conn, words, where, limit)``: full-text search ranked best first, returning
  ``[(events.id, score)]`` with higher scores better; the default is a portable ``LIKE`` scan
  (correct, slow). PostgreSQL: a ``tsvector`` column or expression index with
  ``to_tsquery('simple', 'word:* | other:*')`` and ``ts_rank``.
* ``_index_catch_up(conn, max_rows)``: index rows written since the last call (returns rows
  indexed); the default does nothing (an index maintained by the database itself, such as a
  generated ``tsvector`` column, needs no catch-up). ``_index_pending()``: rows not indexed yet.
* ``_record_contains(needle)``: a condition that the ``record`` bytes contain ``needle``
  (forget's prefilter; SQLite ``instr``, PostgreSQL ``position(needle in record) > 0``); the
  default ``None`` checks every record of the agent in Python.
* ``_erase_prepare(conn)`` / ``_erase_in_transaction(conn, ids)`` / ``_erase_finish()``: before,
  inside (after the tombstone UPDATE, before COMMIT) and after a forget. SQLite switches on
  ``secure_delete``, merges the FTS5 segments so erased terms leave the file, and checkpoints
  the WAL. A ``tsvector`` column of the same row is cleared by the tombstone UPDATE itself.
"""
