"""Pydantic AI capability tests; skipped cleanly when the extra is not installed."""

import pytest

pytest.importorskip("pydantic_ai", reason="needs pip install 'agentledger[pydantic-ai]'")
