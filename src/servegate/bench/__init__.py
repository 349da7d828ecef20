"""servegate.bench."""
