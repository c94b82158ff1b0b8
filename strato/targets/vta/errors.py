"""The one error type of the VTA target: a bad configuration, field, stream or bundle.

A `VTAError` is a `StratoError`, so tools print it as one line and exit 1. When the fault
belongs to one instruction of a stream, `index` is its position in issue order and the
location reads "instruction N".
"""

from __future__ import annotations

from strato.diagnostics import StratoError


class VTAError(StratoError):
    """A fault in a VTA configuration, instruction, stream or bundle.

    >>> str(VTAError("deadlock", index=3))
    'instruction 3: error: deadlock'
    """

    def __init__(self, message: str, index: int | None = None, location: str | None = None):
        if location is None and index is not None:
            location = f"instruction {index}"
        super().__init__(message, location=location)
        self.index = index
