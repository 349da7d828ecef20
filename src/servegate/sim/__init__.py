"""servegate.sim."""
