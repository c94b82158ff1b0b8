"""The te interpreter: runs functions that call te primitives, on numpy arrays.

A function is run op by op (dense constants, `te.call`, `func.call`, `func.return`). A
primitive is run stage by stage, and each stage is evaluated for all its elements at
once: its index arguments are bound to broadcastable `np.arange` grids (one axis per
result dimension, then one per reduction axis), its body ops are applied to whole arrays
(`te.read` is fancy indexing, `arith`/`math` ops are numpy ufuncs on arrays of the
element type, so f32 stays f32), and a reduction folds its reduction axes from `init`,
one element after the other in the canonical loop nest's order, over slices of its
first reduction axis.
Elements are read as their stage-body scalars (`tensor_types.scalar_type`: a `ui8` as
an `int8`, a bf16 as a float32, an 8-bit float as its bits) and stored back as
elements of the stage's tensor type.

    module = Parser(make_context(), text).parse_module()
    (y,) = run_te(module, [x])

`evaluate_scalar_op` holds the numpy meaning of every `arith`/`math` op a stage body may
use; the loop interpreter reuses it for the ops xDSL's interpreter lacks, so both levels
compute with the same numerics.
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Mapping, Sequence
from math import prod

import numpy as np
from xdsl.dialects import arith, func, math
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.traits import SymbolTable

from strato.diagnostics import StratoError
from strato.dialects import te
from strato.dialects.size_sums import SizeSum
from strato.dialects.tensor_types import (
    array_from_dense,
    elements_from_scalars,
    float_to_int_saturating,
    is_unsigned_type,
    numpy_dtype,
    scalars_from_elements,
)
from strato.interpreters.graph import (
    check_inputs,
    entry_function,
    run_loop_call,
    run_scan_call,
)

# A stage is evaluated in slices along its first axis when its index grid (result
# elements times reduction extent) would hold more elements than this.
GRID_ELEMENT_LIMIT = 1 << 22


# ---------------------------------------------------------------------------------------
# Scalar semantics of arith and math, on numpy arrays


def _unsigned(a: np.ndarray) -> np.ndarray:
    """The same bits read as an unsigned integer (for the `u` variants of arith ops)."""
    a = np.asarray(a)
    if a.dtype == np.bool_ or a.dtype.kind == "u":
        return a
    return a.astype(np.dtype(f"uint{a.dtype.itemsize * 8}"))


def _divsi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # arith.divsi rounds toward zero; numpy's // rounds toward minus infinity.
    quotient = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -quotient, quotient)


def _ceildiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return -np.floor_divide(-a, b)


def _round_half_away(a: np.ndarray) -> np.ndarray:
    return np.copysign(np.floor(np.abs(a) + a.dtype.type(0.5)), a)


_erf = np.frompyfunc(pymath.erf, 1, 1)

# arith.cmpi predicates by number: eq ne slt sle sgt sge ult ule ugt uge
_CMPI: list[Callable[[np.ndarray, np.ndarray], np.ndarray]] = [
    np.equal,
    np.not_equal,
    np.less,
    np.less_equal,
    np.greater,
    np.greater_equal,
    lambda a, b: np.less(_unsigned(a), _unsigned(b)),
    lambda a, b: np.less_equal(_unsigned(a), _unsigned(b)),
    lambda a, b: np.greater(_unsigned(a), _unsigned(b)),
    lambda a, b: np.greater_equal(_unsigned(a), _unsigned(b)),
]


def _cmpf(predicate: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # predicates by number: false oeq ogt oge olt ole one ord ueq ugt uge ult ule une uno true
    unordered = np.isnan(a) | np.isnan(b)
    if predicate == 0:
        return np.zeros_like(unordered)
    if predicate == 15:
        return np.ones_like(unordered)
    if predicate == 7:
        return ~unordered
    if predicate == 14:
        return unordered
    # oeq..one are 1..6, ueq..une 8..13: the same comparisons, ordered or not
    compare = {
        1: np.equal,
        2: np.greater,
        3: np.greater_equal,
        4: np.less,
        5: np.less_equal,
        6: np.not_equal,
    }[predicate if predicate < 8 else predicate - 7]
    if predicate < 8:
        return compare(a, b) & ~unordered
    return compare(a, b) | unordered


def _constant(op: arith.ConstantOp) -> np.ndarray:
    value = op.value
    if isinstance(value, FloatAttr | IntegerAttr):
        return np.asarray(value.value.data, dtype=numpy_dtype(op.result.type))
    if isinstance(value, DenseIntOrFPElementsAttr):
        return array_from_dense(value)
    raise StratoError(f"'arith.constant' of {value} cannot be evaluated", op=op)


def _cast(op: Operation, a: np.ndarray) -> np.ndarray:
    return a.astype(numpy_dtype(op.results[0].type))


def _float_to_int(signed: bool) -> Callable[..., np.ndarray]:
    """`arith.fptosi`/`fptoui` as strato lowers them (LLVM's saturating `.sat`
    intrinsics): NaN is 0, values out of range clamp to it."""

    def cast(op: Operation, a: np.ndarray) -> np.ndarray:
        dtype = numpy_dtype(op.results[0].type)
        if dtype == np.bool_:
            return _cast(op, a)
        bits = dtype if signed else np.dtype(f"uint{dtype.itemsize * 8}")
        return np.asarray(float_to_int_saturating(a, bits)).view(dtype)

    return cast


def _unsigned_cast(op: Operation, a: np.ndarray) -> np.ndarray:
    return _unsigned(a).astype(numpy_dtype(op.results[0].type))


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    return lambda op, a, b: fn(a, b)


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    return lambda op, a: fn(a)


def _transcendental(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    # Evaluated in f64 and rounded once to the result type: what xDSL's interpreter
    # does for the math ops it has, and close to a correctly rounded libm.
    return lambda op, *args: fn(*(_widened(a) for a in args))


def _widened(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return a.astype(np.float64) if a.dtype.kind == "f" else a


def _on_unsigned(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[..., np.ndarray]:
    return lambda op, a, b: fn(_unsigned(a), _unsigned(b))


ScalarSemantics = Callable[..., np.ndarray]

SCALAR_SEMANTICS: dict[type[Operation], ScalarSemantics] = {
    arith.ConstantOp: lambda op: _constant(op),
    # floats
    arith.AddfOp: _binary(np.add),
    arith.SubfOp: _binary(np.subtract),
    arith.MulfOp: _binary(np.multiply),
    arith.DivfOp: _binary(np.divide),
    arith.NegfOp: _unary(np.negative),
    arith.MaximumfOp: _binary(np.maximum),
    arith.MinimumfOp: _binary(np.minimum),
    arith.MaxnumfOp: _binary(np.fmax),
    arith.MinnumfOp: _binary(np.fmin),
    arith.CmpfOp: lambda op, a, b: _cmpf(op.predicate.value.data, a, b),
    # integers and indices (numpy integer arithmetic wraps like arith's)
    arith.AddiOp: _binary(np.add),
    arith.SubiOp: _binary(np.subtract),
    arith.MuliOp: _binary(np.multiply),
    arith.DivSIOp: _binary(_divsi),
    arith.DivUIOp: _on_unsigned(np.floor_divide),
    arith.RemSIOp: _binary(np.fmod),
    arith.RemUIOp: _on_unsigned(np.remainder),
    arith.FloorDivSIOp: _binary(np.floor_divide),
    arith.CeilDivSIOp: _binary(_ceildiv),
    arith.CeilDivUIOp: _on_unsigned(_ceildiv),
    arith.MaxSIOp: _binary(np.maximum),
    arith.MinSIOp: _binary(np.minimum),
    arith.MaxUIOp: _on_unsigned(np.maximum),
    arith.MinUIOp: _on_unsigned(np.minimum),
    arith.AndIOp: _binary(np.bitwise_and),
    arith.OrIOp: _binary(np.bitwise_or),
    arith.XOrIOp: _binary(np.bitwise_xor),
    arith.ShLIOp: _binary(np.left_shift),
    arith.ShRSIOp: _binary(np.right_shift),
    arith.ShRUIOp: _on_unsigned(np.right_shift),
    arith.CmpiOp: lambda op, a, b: _CMPI[op.predicate.value.data](a, b),
    arith.SelectOp: lambda op, c, a, b: np.where(c, a, b),
    # conversions
    arith.IndexCastOp: _cast,
    arith.SIToFPOp: _cast,
    arith.FPToSIOp: _float_to_int(signed=True),
    arith.FPToUIOp: _float_to_int(signed=False),
    arith.ExtFOp: _cast,
    arith.TruncFOp: _cast,
    arith.ExtSIOp: _cast,
    arith.TruncIOp: _cast,
    arith.UIToFPOp: _unsigned_cast,
    arith.ExtUIOp: _unsigned_cast,
    arith.BitcastOp: lambda op, a: np.asarray(a).view(numpy_dtype(op.result.type)),
    # math
    math.AbsFOp: _unary(np.abs),
    math.AbsIOp: _unary(np.abs),
    math.CeilOp: _unary(np.ceil),
    math.FloorOp: _unary(np.floor),
    math.TruncOp: _unary(np.trunc),
    math.RoundOp: _unary(_round_half_away),
    math.RoundEvenOp: _unary(np.rint),
    math.ExpOp: _transcendental(np.exp),
    math.Exp2Op: _transcendental(np.exp2),
    math.ExpM1Op: _transcendental(np.expm1),
    math.LogOp: _transcendental(np.log),
    math.Log2Op: _transcendental(np.log2),
    math.Log10Op: _transcendental(np.log10),
    math.Log1pOp: _transcendental(np.log1p),
    math.SqrtOp: _transcendental(np.sqrt),
    math.RsqrtOp: _transcendental(lambda a: 1.0 / np.sqrt(a)),
    math.CbrtOp: _transcendental(np.cbrt),
    math.TanhOp: _transcendental(np.tanh),
    math.SinOp: _transcendental(np.sin),
    math.CosOp: _transcendental(np.cos),
    math.TanOp: _transcendental(np.tan),
    math.SinhOp: _transcendental(np.sinh),
    math.CoshOp: _transcendental(np.cosh),
    math.AsinOp: _transcendental(np.arcsin),
    math.AcosOp: _transcendental(np.arccos),
    math.AtanOp: _transcendental(np.arctan),
    math.AsinhOp: _transcendental(np.arcsinh),
    math.AcoshOp: _transcendental(np.arccosh),
    math.AtanhOp: _transcendental(np.arctanh),
    math.Atan2Op: _transcendental(np.arctan2),
    math.PowFOp: _transcendental(np.power),
    math.FPowIOp: _binary(np.power),
    math.IPowIOp: _binary(np.power),
    math.CopySignOp: _binary(np.copysign),
    math.ErfOp: _transcendental(_erf),
    # a single rounding: the f32 product is exact in f64
    math.FmaOp: lambda op, a, b, c: np.asarray(a, np.float64) * b + c,
}


def evaluate_scalar_op(op: Operation, args: Sequence[np.ndarray]) -> np.ndarray:
    """The result of an `arith`/`math` op applied elementwise to numpy arrays, as an
    array of the op's result element type. Unknown ops are a `StratoError`."""
    semantics = SCALAR_SEMANTICS.get(type(op))
    if semantics is None:
        raise StratoError(f"the te interpreter cannot evaluate '{op.name}'", op=op)
    with np.errstate(all="ignore"):
        result = semantics(op, *args)
    return np.asarray(result).astype(numpy_dtype(op.results[0].type), copy=False)


# ---------------------------------------------------------------------------------------
# Functions and primitives


def run_te(
    module: ModuleOp, inputs: Sequence[np.ndarray], function: str | None = None
) -> list[np.ndarray]:
    """Interpret the entry function of a te-level module on `inputs`; its outputs."""
    entry = entry_function(module, function)
    return _run_function(module, entry, check_inputs(entry, inputs))


def run_primitive(
    primitive: te.PrimitiveOp,
    inputs: Sequence[np.ndarray],
    sizes: Mapping[str, int] | None = None,
    caller_sizes: Mapping[str, int] | None = None,
) -> list[np.ndarray]:
    """The outputs of one primitive on arrays bound to its placeholders in order. A
    `te.size` takes its value from the first placeholder dimension it sizes, or from
    `sizes` by name; one that is a sum of sizes (`SizeSum`) from the sizes it sums, the
    primitive's own or else its caller's (`caller_sizes`, by name)."""
    placeholders = primitive.placeholders
    name = f"@{primitive.sym_name.data}"
    if len(inputs) != len(placeholders):
        raise StratoError(
            f"{name} takes {len(placeholders)} inputs, got {len(inputs)}", op=primitive
        )
    values: dict[SSAValue, int] = {}
    for size in primitive.run_time_sizes:
        if sizes is not None and size.size_name.data in sizes:
            values[size.result] = int(sizes[size.size_name.data])
    arrays = [np.asarray(a, dtype=numpy_dtype(p.result.type)) for p, a in zip(placeholders, inputs)]
    for placeholder, array in zip(placeholders, arrays):
        extents = te.dim_extents(placeholder.result.type, placeholder.sizes)
        if array.ndim == len(extents):
            for extent, given in zip(extents, array.shape):
                if isinstance(extent, SSAValue):
                    values.setdefault(extent, given)
    by_name = dict(caller_sizes or {}) | {
        size.size_name.data: values[size.result] for size in primitive.run_time_sizes if size.result in values
    }
    for size in primitive.run_time_sizes:
        total = SizeSum.parse(size.size_name.data)
        if size.result not in values and total is not None and set(total.names) <= set(by_name):
            values[size.result] = total.evaluate(by_name)
    for size in primitive.run_time_sizes:
        if size.result not in values:
            raise StratoError(
                f"{name}: no placeholder gives the run-time size \"{size.size_name.data}\" "
                "(pass it in sizes)",
                op=size,
            )
    tensors: dict[SSAValue, np.ndarray] = {}
    for placeholder, array in zip(placeholders, arrays):
        shape = _concrete(placeholder.result.type, placeholder.sizes, values)
        if array.shape != shape:
            raise StratoError(
                f'placeholder "{placeholder.tensor_name.data}" of {name} expects shape '
                f"{list(shape)}, got {list(array.shape)}",
                op=placeholder,
            )
        tensors[placeholder.result] = array
    for op in primitive.body.block.ops:
        if isinstance(op, te.StageOp):
            shape = _concrete(op.result.type, op.sizes, values)
            extents = None
            if isinstance(op, te.ReduceOp) and op.has_run_time_extents:
                extents = tuple(
                    e if isinstance(e, int) else values[e] for e in op.reduce_bounds()
                )
            tensors[op.result] = evaluate_stage(op, tensors, shape, extents, values)
    return [tensors[v].copy() for v in primitive.output.values]


def _concrete(
    type_: Attribute, sizes: Sequence[SSAValue], values: Mapping[SSAValue, int]
) -> tuple[int, ...]:
    """The shape of a tensor of `type_` with its run-time sizes bound to `values`."""
    return tuple(
        values[extent] if isinstance(extent, SSAValue) else extent
        for extent in te.dim_extents(type_, sizes)
    )


def _argument_sizes(function: func.FuncOp, inputs: Sequence[np.ndarray]) -> dict[str, int]:
    """The run-time sizes the arguments of `function` name (`te.sizes`), as the
    arrays `inputs` have them."""
    sizes: dict[str, int] = {}
    for n, (arg, array) in enumerate(zip(function.args, inputs)):
        attrs = function.arg_attrs.data[n].data if function.arg_attrs is not None else {}
        names = attrs.get(te.SIZES_ATTR)
        if not isinstance(names, ArrayAttr) or not isinstance(arg.type, TensorType):
            continue
        axes = [d for d, size in enumerate(arg.type.get_shape()) if size < 0]
        for d, name in zip(axes, names.data):
            if isinstance(name, StringAttr) and d < np.ndim(array):
                sizes.setdefault(name.data, np.shape(array)[d])
    return sizes


def _run_function(
    module: ModuleOp, function: func.FuncOp, inputs: Sequence[np.ndarray]
) -> list[np.ndarray]:
    env: dict[SSAValue, np.ndarray] = dict(zip(function.args, inputs))
    sizes = _argument_sizes(function, inputs)
    for op in function.body.block.ops:
        if isinstance(op, func.ReturnOp):
            return [env[v] for v in op.arguments]
        args = [env[v] for v in op.operands]
        if isinstance(op, te.CallOp):
            callee = _lookup(module, op.callee.string_value(), op)
            if not isinstance(callee, te.PrimitiveOp):
                raise StratoError(f"@{op.callee.string_value()} is not a te.primitive", op=op)
            results = run_primitive(callee, args, caller_sizes=sizes)
        elif isinstance(op, func.CallOp):
            results = _run_function(module, entry_function(module, op.callee.string_value()), args)
        elif isinstance(op, te.CondCallOp):
            callee = op.callee(bool(np.asarray(args[0]).reshape(-1)[0]))
            results = _run_function(module, entry_function(module, callee), args[1:])
        elif isinstance(op, te.LoopCallOp):
            results = run_loop_call(
                args, len(op.inits),
                lambda inputs, name=op.callee: _run_function(module, entry_function(module, name), inputs),
            )  # fmt: skip
        elif isinstance(op, te.ScanCallOp):
            results = run_scan_call(
                op, args,
                lambda inputs, name=op.callee: _run_function(module, entry_function(module, name), inputs),
            )  # fmt: skip
        elif isinstance(op, arith.ConstantOp):
            results = [_constant(op)]
        else:
            raise StratoError(f"the te interpreter cannot run '{op.name}'", op=op)
        for value, array in zip(op.results, results, strict=True):
            env[value] = array
    raise StratoError(f"@{function.sym_name.data} has no func.return", op=function)


def _lookup(module: ModuleOp, name: str, user: Operation) -> Operation:
    callee = SymbolTable.lookup_symbol(module, name)
    if callee is None:
        raise StratoError(f"no symbol named @{name} in the module", op=user)
    return callee


# ---------------------------------------------------------------------------------------
# Stages


def evaluate_stage(
    stage: te.StageOp,
    tensors: dict[SSAValue, np.ndarray],
    shape: Sequence[int] | None = None,
    extents: Sequence[int] | None = None,
    sizes: Mapping[SSAValue, int] | None = None,
) -> np.ndarray:
    """All elements of one stage, given the arrays of the tensors it reads (`shape`: its
    result's, when it has run-time dimensions; `extents`: a reduction's, when it has
    run-time extents; `sizes`: the primitive's run-time sizes, which its body may read)."""
    shape = tuple(stage.tensor_type.get_shape() if shape is None else shape)
    extents = tuple(stage.reduce_extents() if extents is None else extents)
    element_type = stage.tensor_type.element_type
    dtype = numpy_dtype(stage.tensor_type)
    if isinstance(stage, te.ReduceOp) and 0 in extents:
        # a run-time extent of 0: nothing combined, every element is the init
        init = np.full(shape, stage.init.value.data)
        return np.asarray(elements_from_scalars(init, element_type), dtype=dtype).reshape(shape)
    result = np.empty(shape, dtype=dtype)
    if not shape:
        values = _evaluate_block(stage, tensors, (), extents, shape=shape, sizes=sizes)
        result[()] = elements_from_scalars(values, element_type)
        return result
    # Slices along the first axis, and for a reduction along its first reduction axis
    # (outermost in the order of the canonical loop nest, so the sum goes on in the same
    # order), keep the index grid of a large stage bounded.
    row = prod(shape[1:]) * prod(extents)
    rows = max(1, GRID_ELEMENT_LIMIT // max(row, 1))
    for start in range(0, shape[0], rows):
        stop = min(start + rows, shape[0])
        if not isinstance(stage, te.ReduceOp) or not extents:
            values = _evaluate_block(stage, tensors, (start, stop), extents, shape=shape, sizes=sizes)
            result[start:stop] = elements_from_scalars(values, element_type)
            continue
        inner = (stop - start) * prod(shape[1:]) * prod(extents[1:])
        chunk = max(1, GRID_ELEMENT_LIMIT // max(inner, 1))
        acc = None
        for first in range(0, extents[0], chunk):
            part = (first, min(first + chunk, extents[0]))
            values = _evaluate_block(stage, tensors, (start, stop), extents, part, shape, sizes)
            acc = _fold_leading(stage, values, len(extents), acc)
        assert acc is not None
        result[start:stop] = acc
    return result


def _evaluate_block(
    stage: te.StageOp,
    tensors: dict[SSAValue, np.ndarray],
    first_axis: tuple[int, ...],
    extents: tuple[int, ...],
    first_reduction: tuple[int, int] | None = None,
    shape: Sequence[int] | None = None,
    sizes: Mapping[SSAValue, int] | None = None,
) -> np.ndarray:
    """The stage's values for result rows first_axis[0]..first_axis[1] (all rows when
    the result is rank 0); of a reduction, folded from `init` (rank 0) or, with
    `first_reduction`, the values of that range of its first reduction axis unfolded."""
    shape = list(stage.tensor_type.get_shape() if shape is None else shape)
    if first_axis:
        shape[0] = first_axis[1] - first_axis[0]
    extents = tuple(extents)
    if first_reduction is not None:
        extents = (first_reduction[1] - first_reduction[0], *extents[1:])
    grid_shape = (*shape, *extents)
    # the unfolded values of a reduction come reduction axes first: each reduction step
    # is then one contiguous array of every result
    position = list(range(len(grid_shape)))
    if first_reduction is not None:
        position = [len(extents) + n for n in range(len(shape))] + list(range(len(extents)))
    env: dict[SSAValue, np.ndarray] = {
        size: np.asarray(value, dtype=np.int64) for size, value in (sizes or {}).items()
    }
    for axis, arg in enumerate(stage.body.block.args):
        broadcast_shape = [1] * len(grid_shape)
        broadcast_shape[position[axis]] = grid_shape[axis]
        offset = 0
        if axis == 0 and first_axis:
            offset = first_axis[0]
        elif axis == len(shape) and first_reduction is not None:
            offset = first_reduction[0]
        env[arg] = np.arange(offset, offset + grid_shape[axis]).reshape(broadcast_shape)
    for op in stage.body.block.ops:
        if isinstance(op, te.YieldOp):
            if first_reduction is not None:
                return np.broadcast_to(env[op.value], (*extents, *shape))
            values = np.broadcast_to(env[op.value], grid_shape)
            if isinstance(stage, te.ReduceOp):
                acc = _fold(stage, values, len(shape))
                return scalars_from_elements(acc, stage.tensor_type.element_type)
            return values
        if isinstance(op, te.ReadOp):
            indices = [env[v] for v in op.indices]
            env[op.result] = _read(op, tensors, indices, stage)
        elif op.regions:
            raise StratoError(
                f"the te interpreter cannot evaluate '{op.name}' in stage "
                f'"{stage.stage.data}": stage bodies hold scalar ops only',
                op=op,
            )
        else:
            env[op.results[0]] = evaluate_scalar_op(op, [env[v] for v in op.operands])
    raise StratoError(f'stage "{stage.stage.data}" has no te.yield', op=stage)


def _read(
    op: te.ReadOp,
    tensors: dict[SSAValue, np.ndarray],
    indices: Sequence[np.ndarray],
    stage: te.StageOp,
) -> np.ndarray:
    tensor = tensors.get(op.tensor)
    if tensor is None:
        raise StratoError(
            f'stage "{stage.stage.data}" reads a tensor that is not computed yet', op=op
        )
    for dim, (index, size) in enumerate(zip(indices, tensor.shape)):
        index = np.asarray(index)
        if index.size and (index.min() < 0 or index.max() >= size):
            raise StratoError(
                f'stage "{stage.stage.data}" reads index {int(index.min())}..'
                f"{int(index.max())} of dimension {dim} (size {size}) out of bounds",
                op=op,
            )
    element_type = op.tensor.type.element_type
    return scalars_from_elements(tensor[tuple(indices)], element_type)


_COMBINE: dict[te.ReduceKind, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    te.ReduceKind.SUM: np.add,
    te.ReduceKind.MAX: np.maximum,
    te.ReduceKind.MIN: np.minimum,
    te.ReduceKind.PROD: np.multiply,
}


def _fold(
    stage: te.ReduceOp, values: np.ndarray, rank: int, acc: np.ndarray | None = None
) -> np.ndarray:
    """Combine the trailing reduction axes of `values` from `acc` (else from `init`),
    one reduction element after the other in row-major order: the order of the
    canonical loop nest, so both levels round the same way. The accumulator is stored
    as an element of the stage's tensor after each step (a bf16 sum rounds each partial
    sum), and integers are compared as the tensor type says (unsigned max for `ui8`).
    The result is an array of the stage's tensor elements."""
    element_type = stage.tensor_type.element_type
    flat = values.reshape(*values.shape[:rank], -1)
    combine = _COMBINE[stage.kind.data]
    if acc is None:
        init = np.asarray(stage.init.value.data, dtype=numpy_dtype(stage.init.type))
        acc = np.full(values.shape[:rank], elements_from_scalars(init, element_type))
    unsigned = is_unsigned_type(element_type)
    with np.errstate(all="ignore"):
        for k in range(flat.shape[-1]):
            value = flat[..., k]
            if unsigned:
                step = combine(acc, elements_from_scalars(value, element_type))
            else:
                step = combine(scalars_from_elements(acc, element_type), value)
            acc = elements_from_scalars(np.asarray(step), element_type)
    return acc


def _fold_leading(
    stage: te.ReduceOp, values: np.ndarray, reductions: int, acc: np.ndarray | None
) -> np.ndarray:
    """`_fold` of values whose `reductions` leading axes are the reduction's."""
    shape = values.shape[reductions:]
    element_type = stage.tensor_type.element_type
    if acc is None:
        init = np.asarray(stage.init.value.data, dtype=numpy_dtype(stage.init.type))
        acc = np.full(shape, elements_from_scalars(init, element_type))
    if not is_unsigned_type(element_type) and values.dtype == acc.dtype and acc.dtype in _EXACT_FOLD:
        # elements that are their own scalars: the same steps, in place, without the
        # conversions (each step an array of every result, contiguous)
        combine = _COMBINE[stage.kind.data]
        acc = acc.copy()
        with np.errstate(all="ignore"):
            for step in values.reshape(-1, *shape):
                combine(acc, step, out=acc)
        return acc
    trailing = np.moveaxis(values, list(range(reductions)), list(range(-reductions, 0)))
    return _fold(stage, trailing, len(shape), acc)


_EXACT_FOLD = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32), np.dtype(np.int64))


__all__ = [
    "GRID_ELEMENT_LIMIT",
    "SCALAR_SEMANTICS",
    "evaluate_scalar_op",
    "evaluate_stage",
    "run_primitive",
    "run_te",
]
