"""Layer 1: plain data, errors, events and crash-safe file helpers. Stdlib only."""
