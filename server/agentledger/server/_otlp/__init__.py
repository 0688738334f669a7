"""OTLP/HTTP trace ingest: decode exports, keep spans until their trace can be linked, and
write them as ledger events whose causes are rebuilt from GenAI / OpenInference attributes."""
