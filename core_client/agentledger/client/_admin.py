# Generated from _async_admin.py by core_client/generate_sync.py: do not edit.
# Change the asyncio source, then run `python core_client/generate_sync.py`.
"""Administration on :class:`Ledger`: API keys and retention policies. These need a
``read_write`` key not bound to an agent; they use the same :class:`Call` path (retries,
error mapping) as every read."""

from __future__ import annotations

from agentledger.client._models import (
    ApiKey,
    KeyRotation,
    RetentionEntry,
    RetentionPolicies,
    RetentionPolicy,
    RetentionRun,
)
from agentledger.client._reads import LedgerReads

__all__ = ["LedgerAdmin"]


class LedgerAdmin(LedgerReads):
    """Key management and retention, on top of every read."""

    # -- API keys --------------------------------------------------------------------------

    def create_key(
        self,
        name: str,
        *,
        agent: str | None = None,
        scope: str = "read_write",
        expires_in_days: int | None = None,
    ) -> ApiKey:
        """Create an API key (``scope`` read_write|read_only); its secret is in ``.key``,
        shown this once."""
        return self._request(self._call_create_key(name, agent, scope, expires_in_days))

    def list_keys(self) -> list[ApiKey]:
        """The server's keys (no secrets)."""
        return self._request(self._call_list_keys())

    def revoke_key(self, key_id: str) -> None:
        """Revoke a key.

        Raises:
            NotFoundError: no such key.
        """
        self._request(self._call_revoke_key(key_id))

    # -- retention -------------------------------------------------------------------------

    def retention_policies(self) -> RetentionPolicies:
        """The default retention policy (``None`` when unset) and every per-agent policy.

        Raises:
            PermissionDeniedError: the key is read-only or bound to an agent.
        """
        return self._request(self._call_retention_policies())

    def set_retention(self, keep: str, *, agent: str | None = None) -> RetentionPolicy:
        """Keep ``agent``'s event content for ``keep`` (``30d``, ``12h``, ``90m``, ``2w``);
        older content is erased to tombstones by the server's sweep. ``agent=None`` sets the
        default, which applies to every agent without a policy of its own.

        Raises:
            UnprocessableEntityError: ``keep`` is not a window; NotFoundError: no events of
                ``agent`` are stored; PermissionDeniedError: not an administrator's key.
        """
        return self._request(self._call_set_retention(keep, agent))

    def unset_retention(self, *, agent: str | None = None) -> bool:
        """Remove ``agent``'s policy (the default applies to it again) or, with
        ``agent=None``, the default; returns whether there was one."""
        return self._request(self._call_unset_retention(agent))

    def run_retention(self, *, dry_run: bool = False, agent: str | None = None) -> RetentionRun:
        """Sweep now (every agent, or one): erase the content of events older than their
        policy's window. ``dry_run`` only counts, per agent and rule, what would be erased.

        Raises:
            NotFoundError: no events of ``agent`` are stored.
        """
        return self._request(self._call_run_retention(dry_run, agent))

    def retention_log(self, *, agent: str | None = None, limit: int = 100) -> list[RetentionEntry]:
        """The erasure report, newest sweep first: per sweep and agent, when, by which rule,
        how many events and which sessions (``limit`` 1..1,000)."""
        return self._request(self._call_retention_log(agent, limit))

    # -- signing keys ----------------------------------------------------------------------

    def rotate_signing_key(self) -> KeyRotation:
        """Retire the active signing key and make a fresh one (admin key); heads signed
        before keep verifying with the retired public key."""
        return self._request(self._call_rotate_signing_key())
