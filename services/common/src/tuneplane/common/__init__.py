"""Tuneplane common."""
