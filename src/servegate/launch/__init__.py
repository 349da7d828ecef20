"""servegate.launch."""
