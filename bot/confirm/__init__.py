"""confirm package."""
