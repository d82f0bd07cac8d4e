"""Tuneplane projector."""
