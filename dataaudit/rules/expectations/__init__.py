"""Expectation rules: a user's Great Expectations suite on the per-row feature table."""
