"""servegate.campaign."""
