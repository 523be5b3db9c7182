"""Shift rules."""
