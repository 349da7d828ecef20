"""servegate.report."""
