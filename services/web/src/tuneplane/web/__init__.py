"""Tuneplane web."""
