"""slack package."""
