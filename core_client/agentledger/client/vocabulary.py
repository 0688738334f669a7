"""The event vocabulary, under its historical client path.

The names live in :mod:`agentledger.protocol.vocabulary`; this module re-exports them so
``import agentledger.client.vocabulary`` and ``from agentledger.client import vocabulary`` keep
working.
"""

from __future__ import annotations

from agentledger.protocol.vocabulary import *  # noqa: F403
from agentledger.protocol.vocabulary import __all__ as __all__
