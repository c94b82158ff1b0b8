"""Autotuning: search spaces, features, cost model, search, measurement, database."""
