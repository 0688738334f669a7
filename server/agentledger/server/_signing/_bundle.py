"""Writing an evidence bundle: the parts (:func:`assemble_parts`, the one place a new file
such as ``decision.json`` is added), a manifest with every file's SHA-256 signed by the
server's active key, all in a zip. Design: ``docs/design/evidence.md``; the verifier is
:mod:`agentledger.evidence`.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from datetime import UTC, datetime
from typing import Any

import orjson

from agentledger.protocol.evidence_bundle import (
    BUNDLE_FORMAT,
    DECISION_FILE,
    GRAPH_FILE,
    KEYS_FILE,
    LINEAGE_FILE,
    MANIFEST_FILE,
    SUMMARY_FILE,
    segment_file,
)
from agentledger.protocol.signed_heads import manifest_payload
from agentledger.server._signing._bundle_material import BundleMaterial
from agentledger.server._signing._bundle_render import render_graph, render_summary
from agentledger.server._signing._keyring import Keyring

__all__ = ["assemble_parts", "write_bundle"]

_JSON = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS


def _lineage(material: BundleMaterial) -> dict[str, Any]:
    return {
        "event_id": material.event_id,
        "agent": material.agent,
        "why": material.why,
        "impact": material.impact,
        "edges": material.edges,
        "events": [
            {k: e.get(k) for k in ("event_id", "agent", "sequence_no", "event", "timestamp")}
            | {"erased": bool(e.get("erased"))}
            for e in material.events
        ],
    }


def _keys(material: BundleMaterial, keyring: Keyring) -> dict[str, Any]:
    used = {keyring.active_id} | {s.head["key_id"] for s in material.segments}
    used |= {a["key_id"] for s in material.segments for a in s.anchors}
    return {
        "note": "informational: verify with a key obtained out of band, never with these",
        "keys": [k for k in keyring.public_keys() if k["key_id"] in used],
    }


def assemble_parts(material: BundleMaterial, keyring: Keyring) -> tuple[dict[str, bytes], str]:
    """Every file of the bundle but the manifest, and the note on the graph.

    A new part is one more entry here: the manifest lists and signs whatever this returns,
    and the verifier checks every listed file's hash. ``decision.json`` is the decision-time
    view of the event; the verifier also checks that every record it cites is in a segment.
    """
    png, graph_note = render_graph(material)
    parts: dict[str, bytes] = {
        LINEAGE_FILE: orjson.dumps(_lineage(material), option=_JSON),
        KEYS_FILE: orjson.dumps(_keys(material, keyring), option=_JSON),
        SUMMARY_FILE: render_summary(material, graph_note),
    }
    if png is not None:
        parts[GRAPH_FILE] = png
    if material.decision is not None:
        parts[DECISION_FILE] = orjson.dumps(material.decision, option=_JSON)
    for index, segment in enumerate(material.segments):
        parts[segment_file(index)] = orjson.dumps(
            {
                "agent": segment.agent,
                "first_seq": segment.first_seq,
                "previous_hash": segment.previous_hash,
                "head": segment.head,
                "anchors": segment.anchors,
                "rows": segment.rows,
            },
            option=orjson.OPT_SORT_KEYS,
        )
    return parts, graph_note


def write_bundle(material: BundleMaterial, keyring: Keyring) -> bytes:
    """The bundle as zip bytes (deflated), its manifest signed by the active key.

    Raises:
        KeyringError: the signing keys cannot be used.
    """
    parts, graph_note = assemble_parts(material, keyring)
    manifest: dict[str, Any] = {
        "format": BUNDLE_FORMAT,
        "event_id": material.event_id,
        "agent": material.agent,
        "created_at": datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z"),
        "graph": graph_note,
        "files": {name: hashlib.sha256(data).hexdigest() for name, data in sorted(parts.items())},
    }
    keyring.refresh()
    while True:  # a rotation between reading the active id and signing: sign again
        manifest["key_id"] = keyring.active_id
        key_id, signature = keyring.sign(manifest_payload(manifest))
        if key_id == manifest["key_id"]:
            break
    manifest["signature"] = signature
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(MANIFEST_FILE, orjson.dumps(manifest, option=_JSON))
        for name, data in sorted(parts.items()):
            archive.writestr(name, data)
    return out.getvalue()
