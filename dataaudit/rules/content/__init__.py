"""Text content rules: empty rows, encoding damage, extreme lengths."""
