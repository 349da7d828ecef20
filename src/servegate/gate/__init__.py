"""servegate.gate."""
