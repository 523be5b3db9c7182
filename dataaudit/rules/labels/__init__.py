"""Label quality: conflicting labels, likely mislabels, class balance and drift, memorization."""
