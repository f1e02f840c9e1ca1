"""Models as small tensor programs with a leading replica (seed) dimension."""
