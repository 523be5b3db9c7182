"""Model evaluation from predictions: failing classes, failure slices, error types (EVAL)."""
