"""Tuneplane collector."""
