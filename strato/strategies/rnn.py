"""Strategies of recurrent operators (LSTM)."""

from __future__ import annotations
