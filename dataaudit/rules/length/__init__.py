"""Length rules."""
