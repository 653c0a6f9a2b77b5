"""``make bench``: every benchmark, run as ``python -m benchmarks.run`` from the repository."""
