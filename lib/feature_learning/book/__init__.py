"""Book machinery: run profiles, reproduction claims, display helpers and the Sphinx report extension."""
