"""LangChain / LangGraph integration tests; skipped cleanly when the extra is not installed."""

import pytest

pytest.importorskip("langchain_core", reason="needs pip install 'agentledger[langchain]'")
pytest.importorskip("langgraph", reason="needs pip install 'agentledger[langchain]'")
pytest.importorskip("langchain.agents", reason="needs pip install 'agentledger[langchain]'")
