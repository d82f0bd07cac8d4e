"""Tuneplane ingest."""
