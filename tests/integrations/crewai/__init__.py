"""CrewAI listener tests; skipped cleanly when the extra is not installed.

CrewAI's telemetry is switched off before CrewAI is imported (otherwise an offline process
waits on its vendor's host at exit). The nox session
``crewai`` sets the same variables.
"""

import os

import pytest

for _name, _value in (
    ("CREWAI_DISABLE_TELEMETRY", "true"),
    ("OTEL_SDK_DISABLED", "true"),
    ("CREWAI_TRACING_ENABLED", "false"),
    ("CREWAI_DISABLE_TRACKING", "true"),
):
    os.environ.setdefault(_name, _value)

pytest.importorskip("crewai", reason="needs pip install 'agentledger[crewai]'")
