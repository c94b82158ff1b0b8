"""Recurrent operators: LSTM."""

from __future__ import annotations

OPS: tuple[type, ...] = ()

__all__: list[str] = []
