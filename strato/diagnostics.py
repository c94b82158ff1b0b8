"""Errors a user can cause: one line, naming the place and the reason.

Everything that reaches the user as an error is a `StratoError`; the tools print its
message (prefixed with the location when one is known) and exit with status 1.
Anything else that escapes is an internal bug and is reported as such.
"""

from __future__ import annotations

from xdsl.ir import Operation
from xdsl.utils.exceptions import DiagnosticException


class StratoError(DiagnosticException):
    """A diagnostic for bad input: malformed IR, an unsupported model, a bad option.

    `location` is "file:line:col" (or a node name for models) when it is known.
    """

    def __init__(self, message: str, location: str | None = None, op: Operation | None = None):
        super().__init__(message)
        self.message = message
        self.location = location
        self.op = op

    def __str__(self) -> str:
        if self.location:
            return f"{self.location}: error: {self.message}"
        return f"error: {self.message}"


class ModelImportError(StratoError):
    """A model that cannot be imported; the message names the node and its op type."""


class SymbolicShapeError(ModelImportError):
    """A graph input whose shape is not known at compile time (a named or unnamed
    dynamic dimension, or no shape): `strato.compile` then compiles per call's sizes
    (`strato.specializing`)."""

    refusal: str = ""
    """Why the model does not compile once for every size (the node, and what it does
    not take), when the import with run-time dimensions was tried; also in the message."""


class RuntimeBranchError(ModelImportError):
    """An If whose condition is known only at run time and whose branches strato cannot
    compile (they give values of other types or shapes; `node` is its first output's name):
    `strato.compile` then runs it on the host, each branch compiled on its own
    (`strato.staged`)."""

    def __init__(self, message: str, node: str, location: str | None = None):
        super().__init__(message, location=location)
        self.node = node


class LegalityError(StratoError):
    """An op left behind by a lowering that should have removed it."""
