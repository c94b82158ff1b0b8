"""te-dedup-primitives: lower each distinct primitive once.

Requires: a te-level module (`te.primitive`s called with `te.call`). Leaves illegal:
nothing.

Primitives whose text is the same but for their own name and the names of their values
(the same placeholders, stages, constants and symbols read) become one: the first of
them, which every call of the others then calls. An unrolled recurrence repeats the same
few primitives at every step (the zoo LSTM: 418 primitives of 13 distinct ones), and
lowering each copy to loops, only for `loop-dedup-kernels` to find the copies equal
again, was a third of its compile. Primitives that become equal only once lowered are
still merged by `loop-dedup-kernels`; the kernels it keeps are the same either way (the
first of each class).

Before:

    te.primitive @tanh_1 { %t0 = te.placeholder "t0" : tensor<4xf32> ... }
    te.primitive @tanh_2 { %t0 = te.placeholder "t0" : tensor<4xf32> ... }   // the same
    func.func @main(..) {
      %a = te.call @tanh_1(%x) : (tensor<4xf32>) -> tensor<4xf32>
      %b = te.call @tanh_2(%a) : (tensor<4xf32>) -> tensor<4xf32>
    }

After:

    te.primitive @tanh_1 { ... }
    func.func @main(..) {
      %a = te.call @tanh_1(%x) : (tensor<4xf32>) -> tensor<4xf32>
      %b = te.call @tanh_1(%a) : (tensor<4xf32>) -> tensor<4xf32>
    }
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from strato.dialects import te
from strato.transforms.loop_dedup_kernels import merge_equal_symbols

_VALUE_NAME = re.compile(r"%[\w.$-]+")
_PLACEHOLDER_NAME = re.compile(r'(te\.placeholder )"(?:[^"\\]|\\.)*"')


def primitive_text(primitive: te.PrimitiveOp) -> str:
    """The primitive's text without its own name or its placeholders' names, its values
    numbered in order of appearance: equal for primitives that compute the same thing.
    A placeholder's name only names the kernel's argument (each ResNet block's
    convolution reads its own "relu" or "max_pool2d"), as a value's does."""
    text = str(primitive).replace(f"@{primitive.sym_name.data}", "@p", 1)
    text = _PLACEHOLDER_NAME.sub(r'\1""', text)
    numbers: dict[str, str] = {}
    return _VALUE_NAME.sub(lambda m: numbers.setdefault(m.group(0), f"%{len(numbers)}"), text)


def dedup_primitives(module: ModuleOp) -> dict[str, str]:
    """Merge the primitives of `module` whose text is equal up to names, in place;
    returns each removed primitive's name -> the primitive its calls now go to."""
    primitives = [op for op in module.ops if isinstance(op, te.PrimitiveOp)]
    # only primitives sharing these cheap traits with another one are printed
    replaced = merge_equal_symbols(module, primitives, _signature, primitive_text, te.CallOp)
    if replaced:
        # a primitive's blocks of rows name primitives too (te.ROW_BLOCKS_ATTR)
        for op in module.ops:
            blocks = te.RowBlocks.of(op) if isinstance(op, te.PrimitiveOp) else None
            if blocks is not None:
                op.attributes[te.ROW_BLOCKS_ATTR] = blocks.renamed(replaced).attr()
    return replaced


def _signature(primitive: te.PrimitiveOp) -> tuple:
    return (
        tuple(primitive.input_types),
        tuple(primitive.output_types),
        tuple(op.name for op in primitive.body.block.ops),
    )


@dataclass(frozen=True)
class TeDedupPrimitivesPass(ModulePass):
    """Merge primitives equal up to names into one, called from every site (see the
    module docstring)."""

    name = "te-dedup-primitives"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        dedup_primitives(op)


__all__ = ["TeDedupPrimitivesPass", "dedup_primitives", "primitive_text"]
