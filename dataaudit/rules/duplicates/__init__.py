"""Duplicate rules: exact (DUP001) and near duplicates (DUP002)."""
