"""LiveKit Agents observer tests; skipped cleanly when the ``livekit`` extra is not installed.

livekit-agents and crewai pin conflicting dependencies, so this suite runs in its own nox
session (``nox -s livekit``) that installs ``.[server,livekit,dev]``.
"""

import pytest

pytest.importorskip("livekit.agents", reason="needs pip install 'agentledger[livekit]'")
