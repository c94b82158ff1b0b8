"""Strategies of reductions over axes."""

from __future__ import annotations
