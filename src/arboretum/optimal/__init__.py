"""He & Little's provably optimal decision trees with arbitrary splitting rules (spec-002)."""
