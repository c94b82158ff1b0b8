"""The loop interpreter: runs loop-level functions on buffers, with xDSL's interpreter.

It uses xDSL's implementations of `func`, `arith`, `memref`, `scf` and `math`, and adds
what they lack:

- `loop.for` (every loop kind runs serially: kinds never change results);
- every `arith`/`math` op of the te interpreter's table
  (`strato.interpreters.te.SCALAR_SEMANTICS`) with its numpy semantics, in place of
  xDSL's Python-float ones, so both levels compute the same numbers (NaN and Inf
  included); xDSL's implement the rest;
- `memref.copy`, `memref.get_global` of any dense constant (splats included), `memref.view`
  of a byte buffer (an arena; its first size may be a run-time value), bounds
  checks on `memref.load`/`memref.store`, and `memref.alloc` in any memory space that
  fills float buffers with NaN, so a read of memory nothing wrote shows in the results.

The entry function follows the loop-level ABI: its arguments are the inputs, then the
output buffers marked `{loop.output}`; `run_loops` allocates the outputs (NaN-filled
floats), calls the function and returns the output buffers as numpy arrays.

    (y,) = run_loops(module, [x])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import builtin, func, memref
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseIntOrFPElementsAttr,
    IndexType,
    MemRefType,
    ModuleOp,
)
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_terminator,
    register_impls,
)
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.builtin import BuiltinFunctions, scalar_attr, xtype_for_el_type
from xdsl.interpreters.func import FuncFunctions
from xdsl.interpreters.math import MathFunctions
from xdsl.interpreters.memref import MemRefFunctions
from xdsl.interpreters.scf import ScfFunctions
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.interpreters.utils.ptr import RawPtr, TypedPtr
from xdsl.ir import Attribute, Operation
from xdsl.traits import SymbolTable

from strato.diagnostics import StratoError
from strato.dialects import loop
from strato.dialects.tensor_types import (
    array_from_dense,
    numpy_dtype,
    reinterpret_array,
)
from strato.interpreters.graph import entry_function
from strato.interpreters.te import SCALAR_SEMANTICS, evaluate_scalar_op

OUTPUT_ATTR = loop.OUTPUT_ATTR
KERNEL_ATTR = loop.KERNEL_ATTR


# ---------------------------------------------------------------------------------------
# Buffers: numpy arrays <-> xDSL's ShapedArray (packed little-endian bytes)


def _storage_dtype(type_: MemRefType) -> np.dtype:
    return numpy_dtype(type_).newbyteorder("<")


def buffer_from_array(array: np.ndarray, type_: MemRefType) -> ShapedArray[Any]:
    """A fresh interpreter buffer of `type_` holding a copy of `array`. Arrays of a
    tensor dtype whose buffers hold its bits (uint8 in an i8 buffer, bfloat16 in an i16
    one) are copied bit for bit."""
    data = reinterpret_array(np.asarray(array), _storage_dtype(type_))
    data = np.require(data, dtype=_storage_dtype(type_), requirements="C")
    xtype = xtype_for_el_type(type_.element_type, Interpreter.DEFAULT_BITWIDTH)
    ptr = TypedPtr[Any](RawPtr(bytearray(data.tobytes())), xtype=xtype)
    # a dynamic dimension takes the array's size
    shape = [n if n >= 0 else int(given) for n, given in zip(type_.get_shape(), np.shape(array), strict=True)]
    return ShapedArray(ptr, shape)


def array_from_buffer(buffer: ShapedArray[Any], type_: MemRefType) -> np.ndarray:
    """A numpy copy of an interpreter buffer of `type_`."""
    raw = buffer.data_ptr.raw
    values = np.frombuffer(
        bytes(raw.memory), dtype=_storage_dtype(type_), count=buffer.size, offset=raw.offset
    )
    if values.dtype == np.bool_:
        # xDSL may store a true i1 as any nonzero byte; numpy's bools are 0 or 1
        values = values.view(np.uint8) != 0
    return values.astype(numpy_dtype(type_)).reshape(buffer.shape)


def _fresh_array(type_: MemRefType, shape: Sequence[int] | None = None) -> np.ndarray:
    fill = np.nan if isinstance(type_.element_type, AnyFloat) else 0
    return np.full(type_.get_shape() if shape is None else shape, fill, dtype=numpy_dtype(type_))


def _check_shape(what: str, shape: Sequence[int], type_: MemRefType) -> None:
    """A buffer of `shape` for `type_`: the same rank, and the static dimensions."""
    expected = type_.get_shape()
    if len(shape) != len(expected) or any(e >= 0 and e != n for e, n in zip(expected, shape)):
        shown = ["?" if e < 0 else e for e in expected]
        raise StratoError(f"{what} has shape {list(shape)}, expected {shown}")


# ---------------------------------------------------------------------------------------
# Implementations xDSL lacks


@register_impls
class LoopFunctions(InterpreterFunctions):
    """`loop.for`: the body runs once per induction value; kinds all run serially."""

    @impl(loop.ForOp)
    def run_for(self, interpreter: Interpreter, op: loop.ForOp, args: PythonValues) -> PythonValues:
        ub = op.ub.data if op.ub is not None else _index_value(args[0])
        for i in range(op.lb.data, ub, op.step.data):
            iv = scalar_attr(i, IndexType(), interpreter.index_bitwidth)
            interpreter.run_ssacfg_region(op.body, (iv,), "loop.for")
        return ()

    @impl_terminator(loop.YieldOp)
    def run_yield(
        self, interpreter: Interpreter, op: loop.YieldOp, args: PythonValues
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(()), ()


@register_impls
class BufferFunctions(MemRefFunctions):
    """xDSL's memref implementations, with bounds-checked loads and stores (xDSL's
    read and write past a row silently), NaN-filled allocations, `memref.copy` and
    `memref.get_global` of any dense constant."""

    @impl(memref.AllocOp)
    def run_alloc(
        self, interpreter: Interpreter, op: memref.AllocOp, args: PythonValues
    ) -> PythonValues:
        type_ = op.memref.type
        assert isinstance(type_, MemRefType)
        sizes = iter(_index_value(value) for value in args[: len(op.dynamic_sizes)])
        shape = [next(sizes) if n < 0 else n for n in type_.get_shape()]
        if any(n < 0 for n in shape):
            raise StratoError(f"memref.alloc of {type_} with a negative size {shape}", op=op)
        return (buffer_from_array(_fresh_array(type_, shape), type_),)

    @impl(memref.LoadOp)
    def run_load(self, interpreter: Interpreter, op: memref.LoadOp, args: tuple[Any, ...]):
        buffer, *indices = args
        value = buffer.load(_checked_index(op, buffer, indices))
        return (scalar_attr(value, op.res.type, interpreter.index_bitwidth),)

    @impl(memref.StoreOp)
    def run_store(
        self, interpreter: Interpreter, op: memref.StoreOp, args: PythonValues
    ) -> PythonValues:
        value, buffer, *indices = args
        buffer.store(_checked_index(op, buffer, indices), value.value.data)
        return ()

    @impl(memref.CopyOp)
    def run_copy(
        self, interpreter: Interpreter, op: memref.CopyOp, args: PythonValues
    ) -> PythonValues:
        source, destination = args
        size = source.size * source.data_ptr.size
        src, dst = source.data_ptr.raw, destination.data_ptr.raw
        dst.memory[dst.offset : dst.offset + size] = src.memory[src.offset : src.offset + size]
        return ()

    @impl(memref.ViewOp)
    def run_view(
        self, interpreter: Interpreter, op: memref.ViewOp, args: PythonValues
    ) -> PythonValues:
        source, shift = args[0], _index_value(args[1])
        type_ = op.result.type
        assert isinstance(type_, MemRefType)
        sizes = iter(_index_value(value) for value in args[2:])
        shape = [next(sizes) if n == memref.DYNAMIC_INDEX else n for n in type_.get_shape()]
        if shift < 0 or any(n < 0 for n in shape):
            raise StratoError(f"memref.view at byte {shift} of sizes {shape}", op=op)
        xtype = xtype_for_el_type(type_.element_type, interpreter.index_bitwidth)
        pointer = TypedPtr[Any](source.data_ptr.raw + shift, xtype=xtype)
        view = ShapedArray(pointer, shape)
        end = shift + view.size * view.data_ptr.size
        if end > source.size * source.data_ptr.size:
            raise StratoError(f"memref.view of bytes {shift}..{end} is out of bounds", op=op)
        return (view,)

    @impl(memref.ReinterpretCastOp)
    def run_reinterpret_cast(
        self, interpreter: Interpreter, op: memref.ReinterpretCastOp, args: PythonValues
    ) -> PythonValues:
        """A view of the source's elements from `offset`, of the given sizes, whose
        strides must be the row-major ones of those sizes (what interpreter buffers hold)."""
        values = iter(_index_value(value) for value in args[1:])
        offsets, sizes, strides = (
            [next(values) if n == memref.DYNAMIC_INDEX else n for n in static.get_values()]
            for static in (op.static_offsets, op.static_sizes, op.static_strides)
        )
        source = args[0]
        row_major = [math.prod(sizes[d + 1 :]) for d in range(len(sizes))]
        if any(stride != expected for stride, size, expected in zip(strides, sizes, row_major) if size > 1):
            raise StratoError(
                f"the loop interpreter runs memref.reinterpret_cast with row-major strides "
                f"only ({row_major} for sizes {sizes}), got {strides}", op=op
            )
        (offset,) = offsets
        return (_elements_from(op, source, offset, sizes),)

    @impl(loop.ViewOp)
    def run_loop_view(
        self, interpreter: Interpreter, op: loop.ViewOp, args: PythonValues
    ) -> PythonValues:
        """The view's elements of the source from its offset (bounds checked)."""
        type_ = op.result.type
        assert isinstance(type_, MemRefType)
        return (_elements_from(op, args[0], _index_value(args[1]), list(type_.get_shape())),)

    @impl(memref.GetGlobalOp)
    def run_get_global(
        self, interpreter: Interpreter, op: memref.GetGlobalOp, args: PythonValues
    ) -> PythonValues:
        global_op = SymbolTable.lookup_symbol(op, op.name_)
        if not isinstance(global_op, memref.GlobalOp):
            raise StratoError(f"no memref.global named {op.name_}", op=op)
        value = global_op.initial_value
        if not isinstance(value, DenseIntOrFPElementsAttr):
            raise StratoError(f"memref.global {op.name_} has no dense initial value", op=op)
        type_ = op.memref.type
        assert isinstance(type_, MemRefType)
        return (buffer_from_array(array_from_dense(value), type_),)


def _elements_from(
    op: Operation, source: ShapedArray[Any], offset: int, shape: list[int]
) -> ShapedArray[Any]:
    """A buffer of `shape` over `source`'s elements from `offset` (row-major), which
    must lie in it."""
    end = offset + math.prod(shape)
    if offset < 0 or end > source.size:
        raise StratoError(
            f"'{op.name}' of elements {offset}..{end} is out of bounds ({source.size} "
            "elements)",
            op=op,
        )
    pointer = TypedPtr[Any](
        source.data_ptr.raw + offset * source.data_ptr.size, xtype=source.data_ptr.xtype
    )
    return ShapedArray(pointer, shape)


def _index_value(value: Any) -> int:
    """An index operand's value as a Python int (the interpreter may hold it as an
    attribute or as a number)."""
    return int(value.value.data) if hasattr(value, "value") else int(value)


def _checked_index(
    op: Operation, buffer: ShapedArray[Any], indices: Sequence[Any]
) -> tuple[int, ...]:
    index = tuple(i.value.data for i in indices)
    if len(index) != len(buffer.shape) or any(not 0 <= i < n for i, n in zip(index, buffer.shape)):
        raise StratoError(
            f"'{op.name}' at index {list(index)} is out of bounds of a buffer of shape "
            f"{buffer.shape}",
            op=op,
        )
    return index


def _scalar_impl(op_type: type[Operation]):
    @impl(op_type)
    def run(
        self: InterpreterFunctions, interpreter: Interpreter, op: Operation, args: PythonValues
    ):
        arrays = [
            np.asarray(arg.value.data).astype(numpy_dtype(operand.type))
            for arg, operand in zip(args, op.operands)
        ]
        if op.name in _DIVISIONS and not arrays[1]:
            # undefined behaviour in arith and LLVM: a program that does it is wrong
            raise ZeroDivisionError("integer division by zero")
        result = evaluate_scalar_op(op, arrays)
        result_type = op.results[0].type
        value = result.item()
        value = float(value) if isinstance(result_type, AnyFloat) else int(value)
        return (scalar_attr(value, result_type, interpreter.index_bitwidth),)

    return run


# Every arith/math op of the te semantics table; registered over xDSL's own.
ScalarOpFunctions = register_impls(
    type(
        "ScalarOpFunctions",
        (InterpreterFunctions,),
        {f"run_{t.__name__}": _scalar_impl(t) for t in SCALAR_SEMANTICS},
    )
)


# ---------------------------------------------------------------------------------------
# Running a module


class _CurrentOp(Interpreter.Listener):
    """The stack of ops being interpreted: its top names the op an error came from."""

    def __init__(self) -> None:
        self.stack: list[Operation] = []

    def will_interpret_op(self, op: Operation, args: PythonValues) -> None:
        self.stack.append(op)

    def did_interpret_op(self, op: Operation, results: PythonValues) -> None:
        self.stack.pop()


_TARGET_FUNCTIONS: list[type[InterpreterFunctions]] = []
"""Implementations of target ops that appear in loop-level programs (a tensor
intrinsic's op, e.g. the llvm target's `cpu.dot_i8`), registered by their target."""


def register_loop_functions(functions: type[InterpreterFunctions]) -> None:
    """Make every loop interpreter from now on run the ops `functions` implements."""
    if functions not in _TARGET_FUNCTIONS:
        _TARGET_FUNCTIONS.append(functions)


def make_interpreter(
    module: ModuleOp, listeners: Sequence[Interpreter.Listener] = ()
) -> Interpreter:
    """xDSL's interpreter with the implementations loop-level programs need."""
    interpreter = Interpreter(module, listeners=tuple(listeners))
    # xDSL's arith/math run on Python floats, which raise where IEEE arithmetic gives
    # NaN or Inf (log of a negative, division by zero): strato's numpy semantics win
    for functions in (ArithFunctions(), MathFunctions()):
        interpreter.register_implementations(functions)
    interpreter.register_implementations(ScalarOpFunctions(), override=True)
    for functions in (BuiltinFunctions(), FuncFunctions(), ScfFunctions()):
        interpreter.register_implementations(functions)
    interpreter.register_implementations(BufferFunctions())
    interpreter.register_implementations(LoopFunctions())
    for target_functions in _TARGET_FUNCTIONS:
        interpreter.register_implementations(target_functions())
    return interpreter


def loop_entry_function(module: ModuleOp, name: str | None = None) -> func.FuncOp:
    """The function called `name`; else the only function that is not a kernel, else
    the only kernel, else `@main`."""
    if name is not None:
        return entry_function(module, name)
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks]
    callers = [f for f in funcs if KERNEL_ATTR not in f.attributes]
    if len(callers) == 1:
        return callers[0]
    if not callers and len(funcs) == 1:
        return funcs[0]
    return entry_function(module, None)


def output_flags(function: func.FuncOp) -> list[bool]:
    """For each argument of `function`, whether it is an output buffer."""
    count = len(function.function_type.inputs.data)
    if function.arg_attrs is None:
        return [False] * count
    return [OUTPUT_ATTR in attrs.data for attrs in function.arg_attrs.data]


def run_loops(
    module: ModuleOp,
    inputs: Sequence[np.ndarray],
    function: str | None = None,
    output_shapes: Sequence[Sequence[int]] | None = None,
) -> list[np.ndarray]:
    """Interpret the entry function of a loop-level module; the output buffers. An
    output buffer of dynamic shape (`memref<?xf32>`) takes its shape from
    `output_shapes` (one per output, in order)."""
    entry = loop_entry_function(module, function)
    name = entry.sym_name.data
    types = entry.function_type.inputs.data
    is_output = output_flags(entry)
    input_types = [t for t, out in zip(types, is_output) if not out]
    if len(inputs) != len(input_types):
        raise StratoError(f"@{name} takes {len(input_types)} inputs, got {len(inputs)}")

    args: list[Any] = []
    outputs: list[tuple[ShapedArray[Any], MemRefType]] = []
    given = iter(enumerate(inputs))
    for type_, out in zip(types, is_output):
        if out:
            if not isinstance(type_, MemRefType):
                raise StratoError(f"output argument of @{name} is {type_}, not a memref")
            shape = type_.get_shape()
            if any(n < 0 for n in shape):
                position = len(outputs)
                if output_shapes is None or position >= len(output_shapes):
                    raise StratoError(
                        f"output {position} of @{name} is {type_}: give its shape (output_shapes)"
                    )
                shape = tuple(output_shapes[position])
                _check_shape(f"output {position} of @{name}", shape, type_)
            buffer = buffer_from_array(_fresh_array(type_, shape), type_)
            outputs.append((buffer, type_))
            args.append(buffer)
        else:
            n, value = next(given)
            args.append(_input_value(name, n, value, type_))

    tracker = _CurrentOp()
    interpreter = make_interpreter(module, [tracker])
    try:
        interpreter.call_op(entry, tuple(args))
    except StratoError:
        raise
    except Exception as error:
        op = tracker.stack[-1] if tracker.stack else entry
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        if isinstance(error, AssertionError | ZeroDivisionError) and op.name in _DIVISIONS:
            reason = "integer division by zero"  # xDSL's arith interpreter asserts
        raise StratoError(
            f"the loop interpreter cannot run '{op.name}': {reason}", op=op
        ) from error
    return [array_from_buffer(buffer, type_) for buffer, type_ in outputs]


_DIVISIONS = frozenset(
    f"arith.{name}"
    for name in ("divsi", "divui", "remsi", "remui", "floordivsi", "ceildivsi", "ceildivui")
)


def _input_value(name: str, n: int, value: Any, type_: Attribute) -> Any:
    if isinstance(type_, MemRefType):
        array = np.asarray(value)
        _check_shape(f"input {n} of @{name}", array.shape, type_)
        return buffer_from_array(array, type_)
    if isinstance(type_, AnyFloat | builtin.IntegerType | IndexType):
        scalar = np.asarray(value).astype(numpy_dtype(type_)).item()
        return scalar_attr(scalar, type_, Interpreter.DEFAULT_BITWIDTH)
    raise StratoError(f"input {n} of @{name} has type {type_}, which cannot be passed")


__all__ = [
    "BufferFunctions",
    "LoopFunctions",
    "ScalarOpFunctions",
    "array_from_buffer",
    "buffer_from_array",
    "loop_entry_function",
    "make_interpreter",
    "output_flags",
    "run_loops",
]
