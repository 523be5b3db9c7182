"""Format rules: nulls and wrong types in role columns, malformed chat rows."""
