"""Weights out of the LLVM IR text: large constant globals become external symbols
whose bytes go to one aligned blob.

Written into the IR, a model's weights are `c"..."` strings that llvmlite escapes byte
by byte and LLVM parses back: tens of megabytes for ResNet-18, about half its compile
time. `pack_weights` moves the initializer of every constant global of at least
`WEIGHT_BLOB_THRESHOLD` bytes into a `WeightBlob` (`strato.runtime.weight_blob`) and
leaves an external declaration of the same type, renamed with the model's prefix so
two models' symbols never meet:

    llvm.mlir.global internal constant @main_w(dense<...> : tensor<4096xf32>) {alignment = 64 : i64} : !llvm.array<4096 x f32>
->
    llvm.mlir.global external constant @mlp_main_w() {alignment = 64 : i64} : !llvm.array<4096 x f32>
    blob.symbols["mlp_main_w"] == (0, 16384)

Smaller constants (biases, shape tables) stay in the IR, where LLVM can fold them. The
JIT binds each declaration to its bytes in the blob (`JitModule(weights=)`), and an
object file for C defines them from it (`compile_object(weights=)`).
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
)

from strato.runtime.weight_blob import ALIGNMENT, WeightBlob
from strato.targets.llvm.type_conversion import element_byte_size, memory_bytes

WEIGHT_BLOB_THRESHOLD = 1024
"""Constants of at least this many bytes go to the blob; smaller ones stay inline."""


def _initializer_bytes(op: llvm.GlobalOp) -> bytes | None:
    """The bytes of a constant array global's dense initializer, laid out as LLVM lays
    out the array; None for globals that are not such constants."""
    type_ = op.global_type
    value = op.value
    if op.constant is None or not isinstance(type_, llvm.LLVMArrayType):
        return None
    if not isinstance(value, DenseIntOrFPElementsAttr):
        return None
    element = type_.type
    if isinstance(
        element, llvm.LLVMArrayType | llvm.LLVMStructType | llvm.LLVMPointerType
    ):
        return None
    count = type_.size.data
    size = element_byte_size(element)
    width = element.width.data if isinstance(element, IntegerType) else 0
    data = memory_bytes(value.data.data, width)
    if len(data) == count * size:
        return data
    if len(data) == size:  # a splat
        return data * count
    return None


def pack_weights(
    module: ModuleOp, prefix: str, threshold: int = WEIGHT_BLOB_THRESHOLD
) -> WeightBlob:
    """Move the large constants of an llvm-dialect module into a blob, in place (see the
    module docstring); their symbols are renamed `<prefix><name>`."""
    constants: dict[str, bytes] = {}
    renamed: dict[str, str] = {}
    taken = {
        op.sym_name.data
        for op in module.ops
        if isinstance(op, llvm.GlobalOp | llvm.FuncOp)
    }
    for op in list(module.ops):
        if not isinstance(op, llvm.GlobalOp):
            continue
        data = _initializer_bytes(op)
        if data is None or len(data) < threshold:
            continue
        if op.alignment is not None and op.alignment.value.data > ALIGNMENT:
            continue  # the blob aligns its symbols to ALIGNMENT only
        name = f"{prefix}{op.sym_name.data}"
        if name in taken:
            raise AssertionError(
                f"weight symbol @{name} clashes with a symbol of the module"
            )
        renamed[op.sym_name.data] = name
        constants[name] = data
        declaration = llvm.GlobalOp(
            op.global_type, name, "external", constant=True, alignment=ALIGNMENT
        )
        module.body.block.insert_op_before(declaration, op)
        module.body.block.detach_op(op)
        op.erase()
    if renamed:
        for op in module.walk():
            if isinstance(op, llvm.AddressOfOp):
                new = renamed.get(op.global_name.root_reference.data)
                if new is not None:
                    op.properties["global_name"] = SymbolRefAttr(StringAttr(new))
    return WeightBlob.pack(constants)


__all__ = ["WEIGHT_BLOB_THRESHOLD", "pack_weights"]
