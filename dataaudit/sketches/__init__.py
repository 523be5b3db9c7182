"""Small mergeable sketches: histograms and counts, MinHash signatures, LSH, n-gram indexes, the
seeded bottom-k row sample, the one 64-bit mixer they share (splitmix64), and the rule state
they are kept in (per-split maps, bounded examples: ``state``)."""
