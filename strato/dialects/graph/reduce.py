"""Reductions over axes: sum, mean, max."""

from __future__ import annotations

OPS: tuple[type, ...] = ()

__all__: list[str] = []
