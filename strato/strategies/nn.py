"""Strategies of neural-network operators: convolution, pooling, normalization, softmax."""

from __future__ import annotations
