"""``tests/server/test_zizkadb_sdk.py`` re-run against ``agentledger serve`` on PostgreSQL."""

from __future__ import annotations

from _stores import reuse_tests

SUITE = reuse_tests("server/test_zizkadb_sdk.py", globals())
