"""Lowering of upstream `func` to the llvm dialect, one pattern per op.

Memref arguments become bare pointers. Each pointer argument keeps its loop-level
type as the argument attribute `strato.memref_type`, next to the attributes it had
(`loop.output`), so tools can check the buffers a caller passes; function attributes
(`loop.kernel`) are kept too.

    func.func @k(%a: memref<4xf32>, %o: memref<4xf32> {loop.output}) attributes {loop.kernel}
->
    llvm.func @k(%a: !llvm.ptr {strato.memref_type = memref<4xf32>},
                 %o: !llvm.ptr {loop.output, strato.memref_type = memref<4xf32>})
                 attributes {loop.kernel}
"""

from __future__ import annotations

from collections.abc import Iterable

from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, MemRefType
from xdsl.ir import Attribute, Operation
from xdsl.pattern_rewriter import PatternRewriter

from strato.targets.llvm import builders
from strato.targets.llvm.lowering_pattern import LLVMLoweringPattern
from strato.targets.llvm.type_conversion import (
    convert_value_type_in_place,
    llvm_type,
    materialize_llvm_all,
    replace_with_llvm,
    unsupported,
)

MEMREF_TYPE_ARG_ATTR = "strato.memref_type"
"""Argument attribute of a lowered function: the memref type its pointer stands for."""


def _single_result(
    op: Operation, result_types: Iterable[Attribute]
) -> Attribute | None:
    types = list(result_types)
    if len(types) > 1:
        raise unsupported(op, "functions with more than one result are not supported")
    return llvm_type(types[0]) if types else None


def _argument_attributes(op: func.FuncOp) -> list[Attribute]:
    inputs = op.function_type.inputs.data
    old = (
        op.arg_attrs.data
        if op.arg_attrs is not None
        else [DictionaryAttr({})] * len(inputs)
    )
    attrs: list[Attribute] = []
    for type_, entries in zip(inputs, old, strict=True):
        data = dict(entries.data)
        if isinstance(type_, MemRefType):
            data[MEMREF_TYPE_ARG_ATTR] = type_
        attrs.append(DictionaryAttr(data))
    return attrs


class FuncOpLowering(LLVMLoweringPattern):
    source_op = func.FuncOp

    def lower(self, op: func.FuncOp, rewriter: PatternRewriter) -> None:
        inputs = [llvm_type(t) for t in op.function_type.inputs.data]
        result = _single_result(op, op.function_type.outputs.data)
        fn_type = builders.function_type(inputs, result)
        body = rewriter.move_region_contents_to_new_regions(op.body)
        for block in body.blocks:
            for arg in block.args:
                convert_value_type_in_place(rewriter, arg)
        new = builders.function(
            op.sym_name.data, fn_type, body, arg_attrs=_argument_attributes(op)
        )
        new.attributes.update(op.attributes)
        rewriter.replace(op, [new], [])


class CallOpLowering(LLVMLoweringPattern):
    source_op = func.CallOp

    def lower(self, op: func.CallOp, rewriter: PatternRewriter) -> None:
        args = materialize_llvm_all(rewriter, op, op.arguments)
        result = _single_result(op, op.result_types)
        call = builders.call(op.callee.root_reference.data, args, result)
        replace_with_llvm(rewriter, op, [call])


class ReturnOpLowering(LLVMLoweringPattern):
    source_op = func.ReturnOp

    def lower(self, op: func.ReturnOp, rewriter: PatternRewriter) -> None:
        values = materialize_llvm_all(rewriter, op, op.arguments)
        if len(values) > 1:
            raise unsupported(op, "returning more than one value is not supported")
        rewriter.replace(op, [builders.return_(values[0] if values else None)], [])


def func_to_llvm_patterns() -> list[LLVMLoweringPattern]:
    """The patterns lowering `func` ops to the llvm dialect."""
    return [FuncOpLowering(), CallOpLowering(), ReturnOpLowering()]
