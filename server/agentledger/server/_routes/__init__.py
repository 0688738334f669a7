"""HTTP routes, one module per area; each exposes ``router``."""
