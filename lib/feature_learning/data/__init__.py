"""Data models, one module per family."""
