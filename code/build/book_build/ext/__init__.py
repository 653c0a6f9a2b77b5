"""The book's Sphinx extensions, one job each (listed in ``_config.yml``)."""
