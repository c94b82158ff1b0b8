"""Neural-network operators: convolution, pooling, normalization, softmax."""

from __future__ import annotations

OPS: tuple[type, ...] = ()

__all__: list[str] = []
