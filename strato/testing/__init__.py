"""Shared test support: hypothesis strategies and the equivalence oracle."""
