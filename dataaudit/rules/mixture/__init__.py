"""Mixture rules."""
