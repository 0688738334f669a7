"""What makes a bundle unverifiable as a whole (a report lists everything else)."""

from __future__ import annotations

from agentledger.protocol.errors import LedgerError

__all__ = ["BundleError", "CorruptBundle", "MissingFile", "WrongAgent", "WrongKey"]


class BundleError(LedgerError, ValueError):
    """The bundle cannot be verified at all."""


class CorruptBundle(BundleError):
    """Not a zip, a truncated zip, or a file that is not the JSON it should be."""


class MissingFile(BundleError):
    """A file the bundle must hold (or one its manifest lists) is not in it."""

    def __init__(self, name: str, why: str = "") -> None:
        super().__init__(f"bundle has no {name}{': ' + why if why else ''}")
        self.name = name


class WrongKey(BundleError):
    """A signature names a key other than the public key(s) given to the verifier."""

    def __init__(self, what: str, key_id: str, given: list[str]) -> None:
        super().__init__(
            f"wrong key: {what} is signed by {key_id}, the key given is "
            f"{', '.join(given) or 'none'} (compare the fingerprint with the server's "
            "GET /v1/signing-keys)"
        )
        self.key_id = key_id
        self.given = given


class WrongAgent(BundleError):
    """The bundle is about another agent's event than the one expected."""

    def __init__(self, expected: str, got: str) -> None:
        super().__init__(f"bundle is for agent {got!r}, not {expected!r}")
        self.expected = expected
        self.got = got
