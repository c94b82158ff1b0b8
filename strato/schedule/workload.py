"""Workload keys: structural hashes that name what a kernel computes.

Two primitives get the same key when they compute the same thing on the same shapes:
the same ops in the same order, with the same types, operands (by position, not by
name) and properties. The names of values, placeholders, stages and of the primitive
itself do not count, so the same dense layer in two models is one tuning task.
`kernel_key` does the same for a loop-level kernel: the key of a tuning task, under
which the tuning log keeps its records (the names of its run-time sizes do not count
either).

    key = workload_key(primitive)   # "wl-" + 16 hex digits
    key = kernel_key(kernel)        # "k-" + 16 hex digits
"""

from __future__ import annotations

import functools
import hashlib
import re

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr
from xdsl.ir import Attribute, Block, Operation, SSAValue

from strato.dialects import te

# Properties that only name things.
_NAMING_PROPERTIES = {"stage", "name", "sym_name"}

# A kernel argument's attributes that name its run-time sizes (and a flat buffer's shape
# in them, which the kernel's body states too): its key leaves them out.
_SIZE_NAMING_ATTRS = frozenset({"te.sizes", "loop.size", "loop.shape"})


@functools.lru_cache(maxsize=4096)
def _unnamed(arg_attrs: ArrayAttr) -> ArrayAttr:
    """A kernel's argument attributes without those naming sizes."""
    return ArrayAttr([
        DictionaryAttr({k: v for k, v in attrs.data.items() if k not in _SIZE_NAMING_ATTRS})
        if isinstance(attrs, DictionaryAttr) else attrs
        for attrs in arg_attrs.data
    ])  # fmt: skip


def _canonical_lines(primitive: te.PrimitiveOp) -> list[str]:
    numbers: dict[SSAValue, int] = {}
    blocks: dict[Block, int] = {}

    def number(value: SSAValue) -> str:
        if value not in numbers:
            numbers[value] = len(numbers)
        return f"%{numbers[value]}"

    def attribute(attr: Attribute) -> str:
        return str(attr)

    lines: list[str] = []

    def visit(op: Operation, depth: int) -> None:
        properties = ", ".join(
            f"{k}={attribute(v)}"
            for k, v in sorted(op.properties.items())
            if k not in _NAMING_PROPERTIES
        )
        operands = ", ".join(number(v) for v in op.operands)
        results = ", ".join(f"{number(r)}:{r.type}" for r in op.results)
        lines.append(f"{'  ' * depth}{results} = {op.name}({operands}) <{properties}>")
        for region in op.regions:
            for block in region.blocks:
                blocks[block] = len(blocks)
                args = ", ".join(f"{number(a)}:{a.type}" for a in block.args)
                lines.append(f"{'  ' * depth}^{blocks[block]}({args})")
                for inner in block.ops:
                    visit(inner, depth + 1)

    for op in primitive.body.block.ops:
        visit(op, 0)
    return lines


def workload_key(primitive: te.PrimitiveOp) -> str:
    """A stable key naming what `primitive` computes (see the module docstring)."""
    text = "\n".join(_canonical_lines(primitive))
    return "wl-" + hashlib.sha256(text.encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=8192)
def _attribute_text(attr: Attribute) -> str:
    return str(attr)


def kernel_digest(kernel: func.FuncOp) -> str:
    """A structural hash of a loop-level kernel, as `kernel_key` tells kernels apart
    (every op, type, property and attribute; not the kernel's own name, nor the names
    of values), without printing it: each op is listed by its name, its operands' and
    successors' numbers and the text of its types and attributes, each distinct
    attribute printed once per process. What keys compiled objects, which change with
    strato's source anyway; `kernel_key`, printed text, keys tuning records, which
    outlive versions."""
    numbers: dict[SSAValue, int] = {}
    blocks: dict[Block, int] = {}
    digest = hashlib.sha256()
    update = digest.update

    def visit(op: Operation) -> None:
        fields = [op.name]
        for value in op.operands:
            fields.append(str(numbers.get(value, -1)))
        fields.append("->")
        for result in op.results:
            numbers[result] = len(numbers)
            fields.append(_attribute_text(result.type))
        for name, attr in sorted(op.properties.items()):
            if op is kernel and name == "sym_name":
                continue
            if op is kernel and name == "arg_attrs" and isinstance(attr, ArrayAttr):
                attr = _unnamed(attr)
            fields.append(f"{name}={_attribute_text(attr)}")
        fields.append("|")
        for name, attr in sorted(op.attributes.items()):
            fields.append(f"{name}={_attribute_text(attr)}")
        for successor in op.successors:
            fields.append(f"^{blocks.setdefault(successor, len(blocks))}")
        update(("\x1f".join(fields) + "\n").encode())
        for region in op.regions:
            update(b"{\n")
            for block in region.blocks:
                args = [f"^{blocks.setdefault(block, len(blocks))}"]
                for arg in block.args:
                    numbers[arg] = len(numbers)
                    args.append(_attribute_text(arg.type))
                update(("\x1f".join(args) + "\n").encode())
                for inner in block.ops:
                    visit(inner)
            update(b"}\n")

    visit(kernel)
    return "k-" + digest.hexdigest()[:32]


def kernel_key(kernel: func.FuncOp) -> str:
    """A structural hash of a loop-level kernel: its text without its own name, without
    the names of its run-time sizes, and with value names replaced by their order of
    appearance."""
    named = kernel.properties.get("arg_attrs")
    if isinstance(named, ArrayAttr):
        kernel.properties["arg_attrs"] = _unnamed(named)
    try:
        text = str(kernel).replace(f"@{kernel.sym_name.data}", "@k", 1)
    finally:
        if isinstance(named, ArrayAttr):
            kernel.properties["arg_attrs"] = named
    numbers: dict[str, str] = {}
    text = re.sub(r"%[\w.$-]+", lambda m: numbers.setdefault(m.group(0), f"%{len(numbers)}"), text)
    return "k-" + hashlib.sha256(text.encode()).hexdigest()[:16]


__all__ = ["kernel_digest", "kernel_key", "workload_key"]
