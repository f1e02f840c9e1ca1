"""Measurements on trained models."""
