"""Signed chain heads: the server's Ed25519 signing keys, heads signed and stored, published
outside the ledger, and the evidence bundles built on them. Design: ``docs/design/evidence.md``.
"""
