"""Train–eval leakage rules: overlapping rows (LEAK001) and n-gram contamination (LEAK002)."""
