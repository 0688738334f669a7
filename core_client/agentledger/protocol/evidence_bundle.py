"""The layout of an evidence bundle, shared by the server that writes it and the offline
verifier (:mod:`agentledger.evidence`) that checks it; neither imports the other.

Design: ``docs/design/evidence.md``.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "BUNDLE_FORMAT",
    "DECISION_FILE",
    "GRAPH_FILE",
    "KEYS_FILE",
    "LINEAGE_FILE",
    "MANIFEST_FILE",
    "REQUIRED_FILES",
    "SEGMENT_PREFIX",
    "SUMMARY_FILE",
    "segment_file",
]

#: ``manifest.json``'s ``format``: a verifier refuses another.
BUNDLE_FORMAT: Final = "agentledger-evidence/1"
MANIFEST_FILE: Final = "manifest.json"
LINEAGE_FILE: Final = "lineage.json"
KEYS_FILE: Final = "keys.json"
SUMMARY_FILE: Final = "summary.md"
GRAPH_FILE: Final = "graph.png"
#: The decision-time view of the event (derived from the records; covered by the manifest).
DECISION_FILE: Final = "decision.json"
SEGMENT_PREFIX: Final = "segments/"
#: Files every bundle holds (``graph.png`` only when matplotlib was installed).
REQUIRED_FILES: Final = (MANIFEST_FILE, LINEAGE_FILE, KEYS_FILE, SUMMARY_FILE)


def segment_file(index: int) -> str:
    """The chain segment of the ``index``-th agent of a bundle (the asked event's agent is 0)."""
    return f"{SEGMENT_PREFIX}{index}.json"
