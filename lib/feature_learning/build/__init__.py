"""Build tooling that no chapter imports: the executor, the site and PDF, seed sweeps, the cache key, the GPU
command, the device audits and the Sphinx extensions (``_config.yml``)."""
