"""Benchmarks and the objective suite; run each script as `python benchmarks/<name>.py`."""
