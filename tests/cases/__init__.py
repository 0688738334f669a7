"""Regression cases; skipped cleanly without the ``langchain`` extra."""

import pytest

pytest.importorskip("langchain_core", reason="needs pip install 'agentledger[langchain]'")
pytest.importorskip("langchain.agents", reason="needs pip install 'agentledger[langchain]'")
