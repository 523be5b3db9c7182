"""Small mergeable sketches: histograms and counts, MinHash signatures, LSH, n-gram indexes, the
seeded bottom-k row sample, and the one 64-bit mixer they share (splitmix64)."""
