"""``tests/server/test_routes.py`` re-run on PostgreSQL (the in-process app on a fresh database)."""

from __future__ import annotations

from _stores import reuse_tests

SUITE = reuse_tests("server/test_routes.py", globals())
