"""Evidence bundles over HTTP: ``GET /v1/events/{event_id}/evidence``, a zip a third party
verifies offline with the server's public key (``agentledger evidence verify``). Design:
``docs/design/evidence.md``; reviewers: ``docs/pages/evidence.md``, "Evidence bundles".
"""

from __future__ import annotations

from uuid import UUID

from fastapi import APIRouter, HTTPException, Request, Response

from agentledger.server._auth import ReadPrincipal
from agentledger.server._http import json_response
from agentledger.server._routes._deps import SettingsDep, StoreDep
from agentledger.server._routes.signing import keyring_of
from agentledger.server._signing._bundle import write_bundle
from agentledger.server._signing._bundle_material import BundleTooLarge, gather_material
from agentledger.server._signing._heads import HeadSigner, SigningRefused
from agentledger.server._signing._keyring import KeyringError
from agentledger.server._signing._publish import HeadPublisher
from agentledger.server._store._sql import SQLStore

__all__ = ["router"]

router = APIRouter(prefix="/v1/events", tags=["evidence"])


def _signer(request: Request, store: SQLStore) -> HeadSigner:
    """The app's head signer when one is wired (``app.state.head_signer``), else one over the
    app's keyring that publishes nowhere (the head is still stored in ``signed_heads``)."""
    signer: HeadSigner | None = getattr(request.app.state, "head_signer", None)
    if signer is None:
        signer = HeadSigner(store, keyring_of(request), HeadPublisher(None, None))
    return signer


@router.get(
    "/{event_id}/evidence",
    response_class=Response,
    responses={200: {"content": {"application/zip": {}}}, 404: {}, 409: {}, 422: {}, 503: {}},
)
def evidence_bundle(
    event_id: UUID,
    request: Request,
    principal: ReadPrincipal,
    store: StoreDep,
    settings: SettingsDep,
) -> Response:
    """The event's evidence bundle (zip): its causal ancestry and impact, every record with its
    canonical bytes and checksum, the chain segments linking them to a signed head (signed
    now when no stored head covers them), the public keys, ``summary.md``, ``graph.png``, and
    a manifest of every file's SHA-256 signed by the server's key. 404 for an event the key
    may not see; 409 when the agent's head does not match its rows; 422 when a segment would
    hold more chain rows than ``AGENTLEDGER_EVIDENCE_MAX_ROWS``; 503 when signing is not
    available."""
    if not isinstance(store, SQLStore):
        return json_response({"detail": "evidence bundles need a SQL store"}, status_code=503)
    try:
        signer = _signer(request, store)
        material = gather_material(
            store,
            signer,
            str(event_id),
            agent_scope=principal.agent,
            max_rows=settings.evidence_max_rows,
        )
        if material is None:
            raise HTTPException(404, f"event_id: no event {event_id}")
        bundle = write_bundle(material, signer.keyring)
    except KeyringError as error:
        return json_response({"detail": f"signing keys unavailable: {error}"}, status_code=503)
    except BundleTooLarge as too_large:
        return json_response({"detail": str(too_large)}, status_code=422)
    except SigningRefused as refusal:
        return json_response({"detail": f"cannot sign a head: {refusal}"}, status_code=409)
    return Response(
        bundle,
        media_type="application/zip",
        headers={"Content-Disposition": f'attachment; filename="evidence-{event_id}.zip"'},
    )
