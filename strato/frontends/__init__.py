"""Frontends that import models into the graph dialect."""
