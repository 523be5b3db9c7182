"""Small mergeable sketches: histograms and counts, MinHash signatures, LSH."""
