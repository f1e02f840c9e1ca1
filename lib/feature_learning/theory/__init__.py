"""Closed forms and symbolic checks."""
