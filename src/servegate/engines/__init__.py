"""servegate.engines."""
