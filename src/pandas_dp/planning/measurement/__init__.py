"""Measurements: what a release measures (keys) and the calibrated noise of each (parts).

Below the statistics (which name the measurements they need) and the release path (which
plans, runs and previews them); it depends on public parameters only.
"""
