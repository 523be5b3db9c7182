"""Tokens rules."""
