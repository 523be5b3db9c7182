"""Built-in rules, one per module, grouped by family. The registry finds them by walking this package."""
