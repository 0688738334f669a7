"""OpenAI Agents SDK tracing-processor tests; skipped cleanly when the extra is not installed."""

import pytest

pytest.importorskip("agents", reason="needs pip install 'agentledger[openai-agents]'")
