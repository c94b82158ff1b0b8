"""convert-te-to-loops: each te primitive becomes a kernel of canonical loop nests.

Requires: `te.primitive`s (static shapes, or run-time sizes given by `te.size`), and
functions over tensors whose ops are `te.call` of primitives, `func.call` of other such
functions and dense `arith.constant` tensors (plus scalar ops on non-tensor values). A
function over tensors of run-time sizes names them (`te.sizes` on its arguments and
results) and takes them as `index` arguments after its buffers, one per name
(`loop.size`), a flat buffer argument keeping its tensor's shape (`loop.shape`); the
control-flow calls take static shapes only.
Leaves illegal: every `te` op and every tensor-typed value (checked after the pass).

The result follows the loop-level ABI:

- `te.primitive @p` becomes `func.func @p(%in.., %out.. {loop.output})` with no results
  and the unit attribute `loop.kernel`: inputs in placeholder order, then one output
  buffer per `te.output` value, then one `index` per `te.size` (a primitive compiled
  once for every size: a tensor whose only run-time dimension is the first is a buffer
  of that shape, `memref<?x8xf32>`; one with another is a flat `memref<?xf32>` viewed
  with its sizes and row-major strides, `memref.reinterpret_cast`; the loops over a
  run-time dimension run to its size).
- Tensors of element type T become buffers of `tensor_types.storage_type(T)`: signless
  integers (`tensor<4xui8>` -> `memref<4xi8>`), sub-byte integers and 8-/4-bit floats
  one a byte in an i8, bf16 as its bits in an i16. A `te.read` decodes the loaded
  element to its stage-body scalar (sign- or zero-extends a sub-byte integer, widens
  bf16 to f32) and a store encodes it (keeps the low bits, rounds f32 to bf16 to
  nearest even).
- Each stage becomes a loop nest, a `loop.for` per result dimension (axis named after
  the stage's index argument, else i0, i1, ..), with `stage = "<name>"` on every loop
  of the nest; a rank-0 stage gets one loop of trip count 1 so every stage has its loop.
  A reduction becomes two nests of the same stage: the init nest (loops marked `init`)
  stores `init`, then the update nest accumulates in the buffer with the reduction
  loops innermost (marked `reduction`, axes named after the reduction arguments, else
  k0, k1, ..). The attribute names are defined in `strato.dialects.loop`. A stage that
  `te.output` returns writes its output buffer; other stages write a
  `memref<.., #loop.scope<local>>` allocated before the nest and freed before the return.
- A function over tensors keeps its name and becomes `func.func @f(%in.., %out..
  {loop.output})`: dense constants become `memref.global "private" constant`s read with
  `memref.get_global`, calls pass their output buffers, a returned call result is written
  in place, and other returned values (arguments, constants, a value returned twice) are
  copied. Intermediates live where graph-plan-memory placed them: a function with
  `arena_bytes` allocates one arena, `memref<N x i8>` aligned to 64 bytes, at its start
  and frees it before its return, and a call result with an offset in its call's
  `arena_offsets` is a `memref.view` of the arena at that offset (the plan is checked:
  offsets aligned and in bounds, no two values alive at once share a byte). An
  intermediate without a planned offset is allocated before its call and freed after
  its last use; in a function where some of these have run-time sizes, they and the
  static arena are all views of one arena whose size and offsets are computed from
  the sizes at the function's start (`share_one_arena`).

Before:

    te.primitive @relu {
      %a = te.placeholder "a" : tensor<4xf32>
      %r = te.compute "relu" (%i) : tensor<4xf32> {
        %v = te.read %a[%i] : tensor<4xf32>
        %z = arith.constant 0.0 : f32
        %m = arith.maximumf %v, %z : f32
        te.yield %m : f32
      }
      te.output %r : tensor<4xf32>
    }
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {arena_bytes = 64 : i64} {
      %h = te.call @relu(%x) {arena_offsets = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
      %y = te.call @relu(%h) {arena_offsets = array<i64: -1>} : (tensor<4xf32>) -> tensor<4xf32>
      func.return %y : tensor<4xf32>
    }

After:

    func.func @relu(%a: memref<4xf32>, %r: memref<4xf32> {loop.output}) attributes {loop.kernel} {
      loop.for %i = 0 to 4 axis "i" attributes {stage = "relu"} {
        %v = memref.load %a[%i] : memref<4xf32>
        %z = arith.constant 0.000000e+00 : f32
        %m = arith.maximumf %v, %z : f32
        memref.store %m, %r[%i] : memref<4xf32>
      }
      func.return
    }
    func.func @main(%x: memref<4xf32>, %y: memref<4xf32> {loop.output}) attributes {arena_bytes = 64 : i64} {
      %arena = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
      %offset = arith.constant 0 : index
      %h = memref.view %arena[%offset][] : memref<64xi8> to memref<4xf32>
      func.call @relu(%x, %h) : (memref<4xf32>, memref<4xf32>) -> ()
      func.call @relu(%h, %y) : (memref<4xf32>, memref<4xf32>) -> ()
      memref.dealloc %arena : memref<64xi8>
      func.return
    }

The lowering is a structured walk rather than a set of rewrite patterns: turning tensors
(values) into buffers is a whole-function decision (which buffer a stage or call writes
depends on `te.output`/`func.return`, where it is freed depends on its last use), the
job MLIR gives to its bufferization analysis, not to local patterns; xDSL has neither a
type-converting conversion framework nor bufferization. Each source op still has its own
small lowering class (`ComputeOpLowering`, `CallOpLowering`, ...) that the walk calls.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AnyFloat,
    ArrayAttr,
    BFloat16Type,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    Signedness,
    StridedLayoutAttr,
    StringAttr,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    f32,
    i1,
    i8,
    i16,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, OpResult, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint

from strato.diagnostics import StratoError
from strato.dialects import te
from strato.dialects.loop import (
    INIT_ATTR,
    KERNEL_ATTR,
    OUTPUT_ATTR,
    REDUCTION_ATTR,
    SHAPE_ATTR,
    SIZE_ATTR,
    STAGE_ATTR,
    ForOp,
    LoopKind,
    MemoryScope,
    ScopeAttr,
    ViewOp,
)
from strato.dialects.size_sums import SizeSum
from strato.dialects.tensor_types import (
    is_run_time,
    is_unsigned_type,
    row_type,
    scalar_type,
    storage_type,
    sub_byte_width,
)
from strato.legality import check_legal
from strato.transforms.graph_plan_memory import (
    ALIGNMENT,
    ARENA_BYTES_ATTR,
    ARENA_OFFSETS_ATTR,
    IN_PLACE_ATTR,
    Buffer,
    lifetime,
    live_overlap,
    tensor_bytes,
)

PASS_NAME = "convert-te-to-loops"



def memref_for(type_: Attribute, op: Operation, scope: MemoryScope | None = None) -> MemRefType:
    """The buffer type of a static-shaped tensor type (`op` is blamed otherwise)."""
    if not isinstance(type_, TensorType):
        raise StratoError(f"{PASS_NAME} expects a tensor type, got {type_}", op=op)
    shape = type_.get_shape()
    if any(dim < 0 for dim in shape):
        raise StratoError(f"{PASS_NAME} requires static shapes, got {type_}", op=op)
    space: Attribute = NoneAttr() if scope is None else ScopeAttr(scope)
    return MemRefType(storage_type(type_.element_type), shape, memory_space=space)


# ---------------------------------------------------------------------------------------
# Elements in buffers: decoding after a load, encoding before a store


def _int_constant(builder: Builder, value: int, type_: IntegerType) -> SSAValue:
    return builder.insert(arith.ConstantOp(IntegerAttr(value, type_))).result


def decode_element(builder: Builder, stored: SSAValue, element_type: Attribute) -> SSAValue:
    """The stage-body scalar of an element loaded from its buffer."""
    width = sub_byte_width(element_type)
    if width is not None:
        if is_unsigned_type(element_type):
            mask = _int_constant(builder, (1 << width) - 1, i8)
            return builder.insert(arith.AndIOp(stored, mask)).result
        shift = _int_constant(builder, 8 - width, i8)
        high = builder.insert(arith.ShLIOp(stored, shift)).result
        return builder.insert(arith.ShRSIOp(high, shift)).result
    if isinstance(element_type, BFloat16Type):
        wide = builder.insert(arith.ExtUIOp(stored, i32)).result
        bits = builder.insert(arith.ShLIOp(wide, _int_constant(builder, 16, i32))).result
        return builder.insert(arith.BitcastOp(bits, f32)).result
    return stored


def encode_element(builder: Builder, value: SSAValue, element_type: Attribute) -> SSAValue:
    """The value to store for a stage-body scalar: sub-byte integers keep their low bits,
    f32 rounds to bf16 to nearest even (a NaN stays a quiet NaN)."""
    width = sub_byte_width(element_type)
    if width is not None:
        mask = _int_constant(builder, (1 << width) - 1, i8)
        return builder.insert(arith.AndIOp(value, mask)).result
    if isinstance(element_type, BFloat16Type):
        bits = builder.insert(arith.BitcastOp(value, i32)).result
        sixteen = _int_constant(builder, 16, i32)
        high = builder.insert(arith.ShRUIOp(bits, sixteen)).result
        lsb = builder.insert(arith.AndIOp(high, _int_constant(builder, 1, i32))).result
        bias = builder.insert(arith.AddiOp(lsb, _int_constant(builder, 0x7FFF, i32))).result
        rounded = builder.insert(arith.AddiOp(bits, bias)).result
        nearest = builder.insert(arith.ShRUIOp(rounded, sixteen)).result
        quiet = builder.insert(arith.OrIOp(high, _int_constant(builder, 0x40, i32))).result
        is_nan = builder.insert(arith.CmpfOp(value, value, "uno")).result
        chosen = builder.insert(arith.SelectOp(is_nan, quiet, nearest)).result
        return builder.insert(arith.TruncIOp(chosen, i16)).result
    return value


def load_element(
    builder: Builder, buffer: SSAValue, indices: Sequence[SSAValue], element_type: Attribute
) -> SSAValue:
    load = builder.insert(memref.LoadOp.get(buffer, indices))
    return decode_element(builder, load.res, element_type)


def store_element(
    builder: Builder,
    value: SSAValue,
    buffer: SSAValue,
    indices: Sequence[SSAValue],
    element_type: Attribute,
) -> None:
    stored = encode_element(builder, value, element_type)
    builder.insert(memref.StoreOp.get(stored, buffer, indices))


def _with_shape(attrs: DictionaryAttr, type_: Attribute) -> DictionaryAttr:
    """`attrs` of an argument of tensor type `type_`, with `SHAPE_ATTR` when its buffer
    is flat (a run-time dimension after the first)."""
    if not isinstance(type_, TensorType) or not is_run_time(type_) or _only_first_dynamic(type_):
        return attrs
    shape = [-1 if dim < 0 else dim for dim in type_.get_shape()]
    return DictionaryAttr(attrs.data | {SHAPE_ATTR: DenseArrayBase.from_list(i64, shape)})


def _sized(
    attrs: DictionaryAttr, type_: Attribute, sizes: Sequence[SSAValue], names: Mapping[SSAValue, str]
) -> DictionaryAttr:
    """`attrs` of a kernel's buffer argument of tensor type `type_` whose run-time
    dimensions are of `sizes` (`te.size` results, named by `names`): with their names
    (`te.sizes`) and, for a flat buffer, the tensor's shape (`loop.shape`), as the
    entry's arguments have them, so that the kernel can be called on its own (the
    equivalence checker draws its sizes)."""
    if not isinstance(type_, TensorType) or not is_run_time(type_):
        return attrs
    named = [names[size] for size in sizes if size in names]
    if len(named) != len(sizes):
        return attrs
    attrs = DictionaryAttr(attrs.data | {te.SIZES_ATTR: ArrayAttr([StringAttr(n) for n in named])})
    return _with_shape(attrs, type_)


def _output_arg_attrs(
    inputs: Sequence[DictionaryAttr], output_count: int
) -> ArrayAttr[DictionaryAttr]:
    output = DictionaryAttr({OUTPUT_ATTR: UnitAttr()})
    return ArrayAttr([*inputs, *([output] * output_count)])


def _set_name(value: SSAValue, name: str | None) -> None:
    if name is not None and SSAValue.is_valid_name(name):
        value.name_hint = name


def _has_tensor_type(op: Operation) -> bool:
    types = [v.type for v in (*op.operands, *op.results)]
    return any(isinstance(t, TensorType) for t in types)


# ---------------------------------------------------------------------------------------
# Stages


@dataclass
class LoopNest:
    """Perfectly nested loops, outermost first; `body` inserts into the innermost."""

    loops: list[ForOp]

    @staticmethod
    def build(
        builder: Builder,
        axes: Sequence[tuple[str, int | SSAValue]],
        stage: str,
        marker: str | None = None,
    ) -> LoopNest:
        """Loops over `axes` owned by `stage`, each also carrying the unit attribute
        `marker` when given (init or reduction)."""
        loops: list[ForOp] = []
        for name, extent in axes:
            loop, block = ForOp.build(0, extent, axis=name)
            loop.attributes[STAGE_ATTR] = StringAttr(stage)
            if marker is not None:
                loop.attributes[marker] = UnitAttr()
            _set_name(loop.induction_var, name)
            builder.insert(loop)
            builder = Builder(InsertPoint.before(block.last_op))  # before loop.yield
            loops.append(loop)
        return LoopNest(loops)

    @property
    def ivs(self) -> list[SSAValue]:
        return [loop.induction_var for loop in self.loops]

    @property
    def body(self) -> Builder:
        last = self.loops[-1].body.block.last_op
        assert last is not None
        return Builder(InsertPoint.before(last))


def _axis_names(stage: te.StageOp) -> tuple[list[str], list[str]]:
    """Loop axis names, unique within the stage: the index arguments' name hints, else
    i0, i1, .. for result dimensions and k0, k1, .. for reduction axes."""
    taken: set[str] = set()

    def unique(base: str) -> str:
        name, n = base, 0
        while name in taken:
            n += 1
            name = f"{base}{n}"
        taken.add(name)
        return name

    rank = stage.tensor_type.get_num_dims()
    args = stage.body.block.args
    spatial = [unique(arg.name_hint or f"i{d}") for d, arg in enumerate(args[:rank])]
    reduce = [unique(arg.name_hint or f"k{r}") for r, arg in enumerate(args[rank:])]
    return spatial, reduce


def _spatial_nest(
    stage: te.StageOp,
    builder: Builder,
    names: Sequence[str],
    marker: str | None = None,
    sizes: Mapping[SSAValue, SSAValue] | None = None,
) -> LoopNest:
    """The loops over the result dimensions, marked with the stage name; a run-time
    dimension's loop runs to its size (`sizes`: the te.size values -> the kernel's index
    arguments). A rank-0 result gets a single-iteration loop so that every stage has a
    loop to schedule."""
    extents = [e if isinstance(e, int) else (sizes or {})[e] for e in stage.dims]
    axes = list(zip(names, extents)) or [("i0", 1)]
    return LoopNest.build(builder, axes, stage.stage.data, marker)


def lower_stage_body(
    stage: te.StageOp,
    indices: Sequence[SSAValue],
    buffers: dict[SSAValue, SSAValue],
    builder: Builder,
    sizes: Mapping[SSAValue, SSAValue] | None = None,
) -> SSAValue:
    """Emit the scalar ops of a stage body for one element, its index arguments bound to
    `indices` and the primitive's run-time sizes it reads (a bounds test of a shifted
    position) to `sizes` (te.size values -> the kernel's index arguments); `te.read`
    becomes `memref.load` of the tensor's buffer. The yielded value."""
    mapping: dict[SSAValue, SSAValue] = {**(sizes or {}), **dict(zip(stage.body.block.args, indices))}
    for op in stage.body.block.ops:
        if isinstance(op, te.YieldOp):
            return mapping[op.value]
        if isinstance(op, te.ReadOp):
            ReadOpLowering().lower(op, mapping, buffers, builder)
            continue
        if op.regions or _has_tensor_type(op):
            raise StratoError(
                f"{PASS_NAME} cannot lower '{op.name}' in stage \"{stage.stage.data}\": "
                "stage bodies hold scalar ops only",
                op=op,
            )
        builder.insert(op.clone(mapping))
    raise StratoError(f'stage "{stage.stage.data}" has no te.yield', op=stage)


class ReadOpLowering:
    """te.read %t[%i..] -> memref.load %buffer_of_t[%i..]."""

    def lower(
        self,
        op: te.ReadOp,
        mapping: dict[SSAValue, SSAValue],
        buffers: dict[SSAValue, SSAValue],
        builder: Builder,
    ) -> None:
        buffer = buffers.get(op.tensor)
        if buffer is None:
            raise StratoError("te.read of a tensor that has no buffer yet", op=op)
        assert isinstance(op.tensor.type, TensorType)
        value = load_element(
            builder, buffer, [mapping[i] for i in op.indices], op.tensor.type.element_type
        )
        _set_name(value, op.result.name_hint)
        mapping[op.result] = value


class ComputeOpLowering:
    """te.compute -> one loop per result dimension storing the body's value."""

    def lower(
        self,
        op: te.ComputeOp,
        dest: SSAValue,
        buffers: dict[SSAValue, SSAValue],
        builder: Builder,
        sizes: Mapping[SSAValue, SSAValue] | None = None,
    ) -> ForOp:
        spatial, _ = _axis_names(op)
        nest = _spatial_nest(op, builder, spatial, sizes=sizes)
        indices = nest.ivs[: len(spatial)]
        body = nest.body
        value = lower_stage_body(op, indices, buffers, body, sizes)
        store_element(body, value, dest, indices, op.tensor_type.element_type)
        return nest.loops[0]


_FLOAT_COMBINE = {
    te.ReduceKind.SUM: arith.AddfOp,
    te.ReduceKind.MAX: arith.MaximumfOp,
    te.ReduceKind.MIN: arith.MinimumfOp,
    te.ReduceKind.PROD: arith.MulfOp,
}
_SIGNED_COMBINE = {
    te.ReduceKind.SUM: arith.AddiOp,
    te.ReduceKind.MAX: arith.MaxSIOp,
    te.ReduceKind.MIN: arith.MinSIOp,
    te.ReduceKind.PROD: arith.MuliOp,
}
_UNSIGNED_COMBINE = {
    te.ReduceKind.SUM: arith.AddiOp,
    te.ReduceKind.MAX: arith.MaxUIOp,
    te.ReduceKind.MIN: arith.MinUIOp,
    te.ReduceKind.PROD: arith.MuliOp,
}


def combine_op(
    kind: te.ReduceKind, element_type: Attribute, lhs: SSAValue, rhs: SSAValue
) -> Operation:
    """The arith op combining an accumulator with a value for a reduction kind."""
    if isinstance(element_type, AnyFloat):
        if kind in (te.ReduceKind.MAX, te.ReduceKind.MIN):
            return _FLOAT_COMBINE[kind](lhs, rhs, te.NO_SIGNED_ZEROS)
        return _FLOAT_COMBINE[kind](lhs, rhs)
    assert isinstance(element_type, IntegerType)
    # bool (i1) orders false < true: max is "any", min is "all"; a sum is an "any" too
    # (numpy's), where an i1 add would wrap to false
    if element_type.width.data == 1 and kind == te.ReduceKind.SUM:
        return arith.OrIOp(lhs, rhs)
    if element_type.signedness.data == Signedness.UNSIGNED or element_type.width.data == 1:
        return _UNSIGNED_COMBINE[kind](lhs, rhs)
    return _SIGNED_COMBINE[kind](lhs, rhs)


class ReduceOpLowering:
    """te.reduce -> an init nest over the result dimensions that stores `init`, then
    an update nest over the result dimensions and the reduction axes innermost that
    loads, combines and stores the accumulator."""

    def lower(
        self,
        op: te.ReduceOp,
        dest: SSAValue,
        buffers: dict[SSAValue, SSAValue],
        builder: Builder,
        sizes: Mapping[SSAValue, SSAValue] | None = None,
    ) -> ForOp:
        spatial, reduce = _axis_names(op)
        element_type = op.tensor_type.element_type
        init_nest = _spatial_nest(op, builder, spatial, INIT_ATTR, sizes)
        init_body = init_nest.body
        init = init_body.insert(arith.ConstantOp(_scalar_init(op.init, element_type)))
        _set_name(init.result, "init")
        store_element(init_body, init.result, dest, init_nest.ivs[: len(spatial)], element_type)

        nest = _spatial_nest(op, builder, spatial, sizes=sizes)
        indices = nest.ivs[: len(spatial)]
        bounds = _mapped_extents(op.reduce_bounds(), sizes or {})
        reduction = LoopNest.build(nest.body, list(zip(reduce, bounds)), op.stage.data, REDUCTION_ATTR)
        body = reduction.body
        value = lower_stage_body(op, [*indices, *reduction.ivs], buffers, body, sizes)
        acc = load_element(body, dest, indices, element_type)
        _set_name(acc, "acc")
        combined = body.insert(combine_op(op.kind.data, element_type, acc, value))
        _set_name(combined.results[0], op.kind.data.value)
        store_element(body, combined.results[0], dest, indices, element_type)
        return nest.loops[0]


def _scalar_init(init: FloatAttr | IntegerAttr, element_type: Attribute) -> Attribute:
    """The init of a reduction as a constant of the stage-body scalar type."""
    type_ = scalar_type(element_type)
    if init.type == type_:
        return init
    if isinstance(init, FloatAttr):
        return FloatAttr(init.value.data, type_)
    width = type_.width.data if isinstance(type_, IntegerType) else 64
    value = init.value.data & ((1 << width) - 1)
    if value >= 1 << (width - 1) and width > 1:
        value -= 1 << width  # the same bits as a signless value
    return IntegerAttr(value, type_)


STAGE_LOWERINGS = {te.ComputeOp: ComputeOpLowering(), te.ReduceOp: ReduceOpLowering()}


# ---------------------------------------------------------------------------------------
# Primitives


class PrimitiveOpLowering:
    """te.primitive @p -> func.func @p(inputs.., outputs.. {loop.output}, sizes..)
    {loop.kernel}: the run-time sizes (`te.size`) are `index` arguments after the
    buffers. A tensor whose only run-time dimension is the first is a buffer of that
    shape (`memref<?x8xf32>`: static strides); one with another run-time dimension is a
    flat buffer (`memref<?xf32>`) viewed with its sizes and row-major strides
    (`memref.reinterpret_cast`), as is a stage's local buffer of run-time size."""

    def lower(self, primitive: te.PrimitiveOp) -> func.FuncOp:
        placeholders = primitive.placeholders
        outputs = list(primitive.output.values)
        run_time = primitive.run_time_sizes
        input_types = [_argument_type(p.result.type, p) for p in placeholders]
        output_types = [_argument_type(v.type, primitive.output) for v in outputs]
        names = {size.result: size.size_name.data for size in run_time}
        in_attrs = [_sized(DictionaryAttr({}), p.result.type, p.sizes, names) for p in placeholders]
        out_attrs = [
            _sized(attrs, value.type, value.owner.sizes if isinstance(value.owner, te.StageOp) else (), names)
            for attrs, value in zip(_output_arg_attrs([], len(outputs)).data, outputs, strict=True)
        ]
        kernel = func.FuncOp(
            primitive.sym_name.data,
            (input_types + output_types + [IndexType()] * len(run_time), []),
            arg_attrs=ArrayAttr([
                *in_attrs,
                *out_attrs,
                *[DictionaryAttr({SIZE_ATTR: StringAttr(size.size_name.data)}) for size in run_time],
            ]),
        )
        kernel.attributes[KERNEL_ATTR] = UnitAttr()
        kernel.attributes |= primitive.attributes
        args = kernel.body.block.args
        in_args, out_args = args[: len(input_types)], args[len(input_types) : len(input_types) + len(outputs)]
        sizes: dict[SSAValue, SSAValue] = {}
        for size, arg in zip(run_time, args[len(input_types) + len(outputs) :], strict=True):
            _set_name(arg, size.size_name.data)
            sizes[size.result] = arg
        builder = Builder(InsertPoint.at_end(kernel.body.block))

        buffers: dict[SSAValue, SSAValue] = {}
        for placeholder, arg in zip(placeholders, in_args):
            _set_name(arg, placeholder.result.name_hint)
            buffers[placeholder.result] = _shaped(builder, arg, placeholder.result, placeholder.sizes, sizes)
        # A stage returned by te.output writes the output buffer itself; any other
        # returned value (a placeholder, a stage returned again) is copied into it.
        destinations: dict[SSAValue, SSAValue] = {}
        copies: list[tuple[SSAValue, SSAValue]] = []
        for n, (value, arg) in enumerate(zip(outputs, out_args)):
            if isinstance(value.owner, te.StageOp) and value not in destinations:
                _set_name(arg, value.name_hint or f"out{n}")
                destinations[value] = _shaped(builder, arg, value, value.owner.sizes, sizes)
            else:
                if is_run_time(value.type):
                    raise StratoError(
                        f"{PASS_NAME}: @{primitive.sym_name.data} returns a tensor of "
                        "run-time size that no stage of it computes (a copy of unknown size)",
                        op=primitive.output,
                    )
                copies.append((value, arg))
                _set_name(arg, f"out{n}")

        scratch: list[SSAValue] = []
        for op in primitive.body.block.ops:
            if not isinstance(op, te.StageOp):
                continue
            dest = destinations.get(op.result)
            if dest is None:
                dest, allocation = self._alloc_local(op, builder, sizes)
                scratch.append(allocation)
            buffers[op.result] = dest
            STAGE_LOWERINGS[type(op)].lower(op, dest, buffers, builder, sizes)
        for value, arg in copies:
            builder.insert(memref.CopyOp(buffers[value], arg))
        for buffer in scratch:
            builder.insert(memref.DeallocOp.get(buffer))
        builder.insert(func.ReturnOp())
        return kernel

    @staticmethod
    def _alloc_local(
        stage: te.StageOp, builder: Builder, sizes: Mapping[SSAValue, SSAValue]
    ) -> tuple[SSAValue, SSAValue]:
        """The local buffer of a stage's result (a view of it for run-time sizes), and
        the allocation to free."""
        type_ = _argument_type(stage.result.type, stage, MemoryScope.LOCAL)
        dynamic = [sizes[e] for e in stage.dims if not isinstance(e, int)]
        if not dynamic:
            alloc = builder.insert(memref.AllocOp([], [], type_))
            _set_name(alloc.memref, stage.result.name_hint)
            return alloc.memref, alloc.memref
        if _only_first_dynamic(stage.result.type):
            alloc = builder.insert(memref.AllocOp(dynamic, [], type_))
            _set_name(alloc.memref, stage.result.name_hint)
            return alloc.memref, alloc.memref
        count = _product(builder, _mapped_extents(stage.dims, sizes))
        assert isinstance(count, SSAValue)  # a run-time dimension is among the factors
        alloc = builder.insert(memref.AllocOp([count], [], type_))
        _set_name(alloc.memref, stage.result.name_hint)
        return _shaped(builder, alloc.memref, stage.result, stage.sizes, sizes), alloc.memref


def _only_first_dynamic(type_: Attribute) -> bool:
    assert isinstance(type_, TensorType)
    return all(dim >= 0 for dim in type_.get_shape()[1:])


def _argument_type(type_: Attribute, op: Operation, scope: MemoryScope | None = None) -> MemRefType:
    """The buffer type of a tensor: `memref_for`'s when static, its shape when only its
    first dimension is a run-time size, else flat (`memref<?xT>`, viewed by `_shaped`)."""
    if not is_run_time(type_):
        return memref_for(type_, op, scope)
    assert isinstance(type_, TensorType)
    shape = type_.get_shape() if _only_first_dynamic(type_) else [DYNAMIC_INDEX]
    space: Attribute = NoneAttr() if scope is None else ScopeAttr(scope)
    return MemRefType(storage_type(type_.element_type), shape, memory_space=space)


def _mapped_extents(
    extents: Sequence[int | SSAValue], sizes: Mapping[SSAValue, SSAValue]
) -> list[int | SSAValue]:
    return [e if isinstance(e, int) else sizes[e] for e in extents]


def _product(builder: Builder, factors: Sequence[int | SSAValue]) -> int | SSAValue:
    """The product of static and index factors: an int when all are static, else index
    ops (the static ones folded into one constant)."""
    static = 1
    value: SSAValue | None = None
    for factor in factors:
        if isinstance(factor, int):
            static *= factor
        elif value is None:
            value = factor
        else:
            value = builder.insert(arith.MuliOp(value, factor)).result
    if value is None or static == 1:
        return static if value is None else value
    constant = builder.insert(arith.ConstantOp(IntegerAttr(static, IndexType()))).result
    return builder.insert(arith.MuliOp(value, constant)).result


def _shaped(
    builder: Builder,
    buffer: SSAValue,
    tensor: SSAValue,
    tensor_sizes: Sequence[SSAValue],
    sizes: Mapping[SSAValue, SSAValue],
) -> SSAValue:
    """`buffer` as the tensor's shape: itself when its type has that shape, else (a
    flat buffer of a tensor with a run-time dimension after the first) a row-major
    view with the run-time sizes."""
    type_ = tensor.type
    assert isinstance(type_, TensorType) and isinstance(buffer.type, MemRefType)
    if not is_run_time(type_) or _only_first_dynamic(type_):
        return buffer
    extents = _mapped_extents(te.dim_extents(type_, tensor_sizes), sizes)
    strides = [_product(builder, extents[d + 1 :]) for d in range(len(extents))]
    static_strides = [s if isinstance(s, int) else None for s in strides]
    view_type = MemRefType(
        buffer.type.element_type,
        [e if isinstance(e, int) else DYNAMIC_INDEX for e in extents],
        StridedLayoutAttr(static_strides, 0),
        buffer.type.memory_space,
    )
    view = builder.insert(
        memref.ReinterpretCastOp.from_dynamic(buffer, [0], extents, strides, view_type)
    )
    _set_name(view.result, f"{buffer.name_hint or 'buffer'}_view")
    return view.result


# ---------------------------------------------------------------------------------------
# Functions over tensors


class SymbolNames:
    """Fresh symbol names within one module."""

    def __init__(self, module: ModuleOp):
        self.taken = {
            attr.data
            for op in module.ops
            if isinstance(attr := op.properties.get("sym_name"), StringAttr)
        }

    def fresh(self, base: str) -> str:
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name


@dataclass
class ConstantOpLowering:
    """arith.constant dense<..> : tensor<..> -> a private constant memref.global (placed
    before the function) and a memref.get_global of it."""

    names: SymbolNames

    def lower(self, op: arith.ConstantOp, function: func.FuncOp, builder: Builder) -> SSAValue:
        type_ = memref_for(op.result.type, op)
        name = self.names.fresh(f"{function.sym_name.data}_{op.result.name_hint or 'cst'}")
        value = op.value
        if isinstance(value, DenseIntOrFPElementsAttr) and value.type.element_type != (
            type_.element_type
        ):
            # the same bytes, as the buffer's element type (ui8 -> i8, bf16 -> i16)
            storage = TensorType(type_.element_type, value.type.get_shape())
            value = DenseIntOrFPElementsAttr(storage, value.data)
        global_op = memref.GlobalOp.get(StringAttr(name), type_, value, constant=UnitAttr())
        function.parent_block().insert_op_before(global_op, function)  # type: ignore[union-attr]
        get = builder.insert(memref.GetGlobalOp(name, type_))
        _set_name(get.memref, op.result.name_hint)
        return get.memref


class CallOpLowering:
    """te.call @p(%a..) / func.call @f(%a..) over tensors -> func.call @p(%a.., %out..,
    %sizes..), the output buffers given by the caller, then the callee's run-time
    sizes."""

    def lower(
        self,
        op: te.CallOp | func.CallOp,
        operands: Sequence[SSAValue],
        destinations: Sequence[SSAValue],
        builder: Builder,
        sizes: Sequence[SSAValue] = (),
    ) -> None:
        callee = op.callee.string_value()
        builder.insert(func.CallOp(callee, [*operands, *destinations, *sizes], []))


def function_size_names(function: func.FuncOp) -> list[str]:
    """The run-time sizes a function over tensors takes after its buffers: the names
    its arguments give their run-time dimensions (`te.sizes`), each once, in order."""
    names: list[str] = []
    inputs = function.function_type.inputs.data
    for n, type_ in enumerate(inputs):
        for size_name in _dimension_names(function, n, type_, function.arg_attrs):
            if size_name not in names:
                names.append(size_name)
    for n, type_ in enumerate(function.function_type.outputs.data):
        for size_name in _dimension_names(function, n, type_, function.res_attrs, "result"):
            total = SizeSum.parse(size_name)
            if size_name not in names and (total is None or not set(total.names) <= set(names)):
                raise StratoError(
                    f"{PASS_NAME}: result {n} of @{function.sym_name.data} has the run-time "
                    f"size '{size_name}', which no argument gives",
                    op=function,
                )
    return names


def _dimension_names(
    function: func.FuncOp,
    index: int,
    type_: Attribute,
    attrs: ArrayAttr[DictionaryAttr] | None,
    what: str = "argument",
) -> list[str]:
    """The names of the run-time dimensions of a function's argument or result
    (`te.sizes`); each unnamed one is a size of its own, named after its position."""
    dynamic = [d for d, dim in enumerate(type_.get_shape()) if dim < 0] if isinstance(
        type_, TensorType
    ) else []
    if not dynamic:
        return []
    given = attrs.data[index].data.get(te.SIZES_ATTR) if attrs is not None else None
    if given is None:
        if what == "result":
            raise StratoError(
                f"{PASS_NAME}: result {index} of @{function.sym_name.data} has run-time "
                f"dimensions but does not name their sizes ('{te.SIZES_ATTR}')",
                op=function,
            )
        return [f"{what}{index}_{d}" for d in dynamic]
    if (
        not isinstance(given, ArrayAttr)
        or not all(isinstance(a, StringAttr) for a in given.data)
        or len(given.data) != len(dynamic)
    ):
        raise StratoError(
            f"{PASS_NAME}: '{te.SIZES_ATTR}' of {what} {index} of @{function.sym_name.data} "
            f"must name its {len(dynamic)} run-time dimension(s), got {given}",
            op=function,
        )
    return [a.data for a in given.data]  # type: ignore[union-attr]


@dataclass
class SizeSignature:
    """How a primitive of run-time sizes is sized by its caller: its sizes (`te.size`
    names, in order) and, per placeholder and per output, each dimension's static size
    or size name."""

    sizes: list[str]
    inputs: list[list[int | str]]
    outputs: list[list[int | str]]

    @staticmethod
    def of(primitive: te.PrimitiveOp) -> SizeSignature:
        names = {size.result: size.size_name.data for size in primitive.run_time_sizes}

        def dims(value: SSAValue) -> list[int | str]:
            owner = value.owner
            assert isinstance(owner, te.PlaceholderOp | te.StageOp)
            return [
                names[d] if isinstance(d, SSAValue) else d
                for d in te.dim_extents(value.type, owner.sizes)
            ]

        return SizeSignature(
            list(names.values()),
            [dims(p.result) for p in primitive.placeholders],
            [dims(v) for v in primitive.output.values],
        )


class RunTimeExtents:
    """The extents of the tensors of a function over tensors of run-time sizes: each
    dimension a static size or an `index` value of the lowered function (one of the
    sizes it takes, which a te.call passes on to its primitive)."""

    def __init__(self, named: Mapping[str, SSAValue]):
        self.named = dict(named)
        self.extents: dict[SSAValue, list[int | SSAValue]] = {}
        self.call_sizes: dict[Operation, list[int | SSAValue]] = {}

    def of_argument(self, function: func.FuncOp, index: int, value: SSAValue) -> None:
        names = iter(_dimension_names(function, index, value.type, function.arg_attrs))
        if isinstance(value.type, TensorType) and is_run_time(value.type):
            self.extents[value] = [
                self.named[next(names)] if dim < 0 else dim for dim in value.type.get_shape()
            ]

    def of(self, value: SSAValue) -> list[int | SSAValue]:
        type_ = value.type
        assert isinstance(type_, TensorType)
        if not is_run_time(type_):
            return list(type_.get_shape())
        return self.extents[value]

    def any_run_time(self, op: Operation) -> bool:
        return any(is_run_time(v.type) for v in (*op.operands, *op.results))

    def bind_call(self, op: te.CallOp, signature: SizeSignature | None, builder: Builder) -> None:
        """The run-time sizes of the primitive `op` calls, bound from the extents of the
        operands its placeholders take (a sum of them, `SizeSum`, computed by `builder`
        before the call), and the extents of its results."""
        if signature is None:
            return
        bound: dict[int, int | SSAValue] = {}
        for dims, operand in zip(signature.inputs, op.args, strict=True):
            for dim, extent in zip(dims, self.of(operand), strict=True):
                if isinstance(dim, str):
                    bound.setdefault(signature.sizes.index(dim), extent)
        for n, size_name in enumerate(signature.sizes):
            total = SizeSum.parse(size_name)
            if n not in bound and total is not None:
                # the primitive's own sizes, else its caller's of those names
                given = self.named | {signature.sizes[k]: extent for k, extent in bound.items()}
                if set(total.names) <= set(given):
                    bound[n] = _size_sum(total, given, builder)
            if n not in bound:
                raise StratoError(
                    f"{PASS_NAME}: the run-time size '{size_name}' of "
                    f"{op.callee} sizes none of its placeholders, so its caller cannot "
                    "give it",
                    op=op,
                )
        self.call_sizes[op] = [bound[n] for n in range(len(signature.sizes))]
        for result, dims in zip(op.res, signature.outputs, strict=True):
            if is_run_time(result.type):
                self.extents[result] = [
                    bound[signature.sizes.index(d)] if isinstance(d, str) else d for d in dims
                ]

    def of_call(self, op: Operation, builder: Builder) -> list[SSAValue]:
        """The sizes `op` passes its primitive (after the buffers), as index values."""
        return [_index_value(builder, e) for e in self.call_sizes.get(op, [])]

    def copy(self, value: SSAValue, source: SSAValue, dest: SSAValue, builder: Builder) -> None:
        """`dest` = `source`, the buffers of `value`: a memref.copy when static, else a
        loop nest over its run-time extents (flat buffers: over their elements)."""
        type_ = value.type
        if not is_run_time(type_):
            builder.insert(memref.CopyOp(source, dest))
            return
        assert isinstance(type_, TensorType)
        extents = self.of(value)
        if not _only_first_dynamic(type_):
            extents = [_product(builder, extents)]
        indices, inner, blocks = _element_loops(extents, builder)
        element = inner.insert(memref.LoadOp.get(source, indices)).res
        inner.insert(memref.StoreOp.get(element, dest, indices))
        for block in blocks:
            block.add_op(scf.YieldOp())

    def alloc(self, value: SSAValue, op: Operation, builder: Builder) -> SSAValue:
        """A new buffer for `value`: of its run-time extents when it has them."""
        type_ = value.type
        if not is_run_time(type_):
            return builder.insert(memref.AllocOp([], [], memref_for(type_, op))).memref
        assert isinstance(type_, TensorType)
        buffer_type = _argument_type(type_, op)
        extents = self.of(value)
        if _only_first_dynamic(type_):
            dynamic = [_index_value(builder, extents[0])]
        else:
            dynamic = [_index_value(builder, _product(builder, extents))]
        return builder.insert(memref.AllocOp(dynamic, [], buffer_type)).memref


def _size_sum(total: SizeSum, sizes: Mapping[str, int | SSAValue], builder: Builder) -> int | SSAValue:
    """`total` of `sizes` (static, or index values), computed by `builder`."""
    value: int | SSAValue = total.constant
    for name, count in total.terms:
        term = sizes[name]
        if isinstance(term, int) and isinstance(value, int):
            value += count * term
            continue
        if abs(count) != 1:
            term = builder.insert(arith.MuliOp(_index_value(builder, term), _index_value(builder, abs(count)))).result
        if value == 0 and count > 0:
            value = term
            continue
        kind = arith.AddiOp if count > 0 else arith.SubiOp
        value = builder.insert(kind(_index_value(builder, value), _index_value(builder, term))).result
    return value


def _index_value(builder: Builder, extent: int | SSAValue) -> SSAValue:
    if isinstance(extent, SSAValue):
        return extent
    return builder.insert(arith.ConstantOp(IntegerAttr(extent, IndexType()))).result


def _is_tensor_call(op: Operation) -> bool:
    """A call that writes its results into buffers its caller gives: of a primitive, of
    a function over tensors, or of one of two by a condition."""
    return isinstance(op, te.CallOp | te.CondCallOp | te.LoopCallOp | te.ScanCallOp) or (
        isinstance(op, func.CallOp) and _has_tensor_type(op)
    )


def _load_first(buffer: SSAValue, builder: Builder) -> SSAValue:
    """The one element of a buffer of any shape holding one (a condition, a count)."""
    rank = len(buffer.type.get_shape())  # type: ignore[union-attr]
    zero = [builder.insert(arith.ConstantOp(IntegerAttr(0, IndexType()))).result] if rank else []
    return builder.insert(memref.LoadOp.get(buffer, zero * rank)).res


def _carry_in(
    inits: Sequence[SSAValue],
    values: Mapping[SSAValue, SSAValue],
    carried: Sequence[SSAValue],
    builder: Builder,
) -> None:
    """Copy a loop's initial values into the buffers that carry them (its result
    buffers)."""
    for init, dest in zip(inits, carried, strict=True):
        builder.insert(memref.CopyOp(values[init], dest))


def _next_buffers(carried: Sequence[SSAValue], builder: Builder) -> list[SSAValue]:
    """Buffers of the carried values' types, for the next values an iteration gives."""
    return [builder.insert(memref.AllocOp([], [], d.type)).memref for d in carried]  # type: ignore[arg-type]


def _carry_back(nexts: Sequence[SSAValue], carried: Sequence[SSAValue], builder: Builder) -> None:
    """The next values an iteration gave become the carried ones."""
    for source, dest in zip(nexts, carried, strict=True):
        builder.insert(memref.CopyOp(source, dest))


def lower_loop_call(
    op: te.LoopCallOp,
    values: Mapping[SSAValue, SSAValue],
    destinations: Sequence[SSAValue],
    builder: Builder,
) -> None:
    """te.loop_call -> an scf.while around a call of the body. The carried values live
    in the result buffers (`destinations`), copied in from the initial values; each
    iteration calls the body with the iteration number and condition (scalar buffers),
    the carried values and the captured ones, into buffers of its own for the next
    condition and values, which are then copied back."""
    _carry_in(op.inits, values, destinations, builder)
    limit = _load_first(values[op.max_trip], builder)
    scalars = []
    for element in (i64, i1, i1):  # iteration number, condition, next condition
        alloc = builder.insert(memref.AllocOp([], [], MemRefType(element, [])))
        scalars.append(alloc.memref)
    iteration, condition, next_condition = scalars
    nexts = _next_buffers(destinations, builder)
    zero = builder.insert(arith.ConstantOp(IntegerAttr(0, i64))).result
    builder.insert(memref.StoreOp.get(zero, iteration, []))
    builder.insert(memref.StoreOp.get(_load_first(values[op.condition], builder), condition, []))

    before = Block()
    test = Builder(InsertPoint.at_end(before))
    number = test.insert(memref.LoadOp.get(iteration, [])).res
    going = test.insert(memref.LoadOp.get(condition, [])).res
    below = test.insert(arith.CmpiOp(number, limit, "slt")).result
    both = test.insert(arith.AndIOp(below, going)).result
    test.insert(scf.ConditionOp(both))

    after = Block()
    step = Builder(InsertPoint.at_end(after))
    arguments = [iteration, condition, *destinations, *(values[v] for v in op.captured)]
    step.insert(func.CallOp(op.callee, [*arguments, next_condition, *nexts], []))
    _carry_back(nexts, destinations, step)
    step.insert(memref.StoreOp.get(step.insert(memref.LoadOp.get(next_condition, [])).res, condition, []))
    one = step.insert(arith.ConstantOp(IntegerAttr(1, i64))).result
    number = step.insert(memref.LoadOp.get(iteration, [])).res
    step.insert(memref.StoreOp.get(step.insert(arith.AddiOp(number, one)).result, iteration, []))
    step.insert(scf.YieldOp())
    builder.insert(scf.WhileOp([], [], Region(before), Region(after)))
    for buffer in (*scalars, *nexts):
        builder.insert(memref.DeallocOp.get(buffer))


def lower_scan_call(
    op: te.ScanCallOp,
    values: Mapping[SSAValue, SSAValue],
    destinations: Sequence[SSAValue],
    builder: Builder,
) -> None:
    """te.scan_call -> an scf.for over the scan's positions around a call of the body.
    The carried values live in their result buffers, copied in from the initial values;
    each position copies its slice of each scanned tensor into a buffer of its own,
    calls the body with the carried values, the slices and the captured values into
    buffers for the next carried values (copied back) and a row of each scan output
    (copied to that position of the stacked result). A scan that `stops` runs a
    position only while its first carried value holds, and zeros the position's rows
    otherwise."""
    carried = len(op.inits)
    _carry_in(op.inits, values, destinations[:carried], builder)

    def alloc_rows(types: Sequence[Attribute]) -> list[SSAValue]:
        return [
            builder.insert(memref.AllocOp([], [], memref_for(row_type(t), op))).memref
            for t in types
        ]

    slices = alloc_rows([v.type for v in op.scanned])
    nexts = _next_buffers(destinations[:carried], builder)
    rows = alloc_rows(op.res.types[carried:])
    body = Block(arg_types=[IndexType()])
    step = Builder(InsertPoint.at_end(body))
    position = body.args[0]
    if op.stops is not None:  # the position runs while the condition holds
        runs, stopped = Block(), Block()
        step.insert(scf.IfOp(_load_first(destinations[0], step), [], Region(runs), Region(stopped)))
        step = Builder(InsertPoint.at_end(runs))
        zeros = Builder(InsertPoint.at_end(stopped))
        for dest in destinations[carried:]:
            _zero_position(dest, position, zeros)
        zeros.insert(scf.YieldOp())
    for scanned, dest in zip(op.scanned, slices, strict=True):
        _copy_position(values[scanned], dest, position, into=False, builder=step)
    arguments = [*destinations[:carried], *slices, *(values[v] for v in op.captured)]
    step.insert(func.CallOp(op.callee, [*arguments, *nexts, *rows], []))
    _carry_back(nexts, destinations[:carried], step)
    for row, dest in zip(rows, destinations[carried:], strict=True):
        _copy_position(row, dest, position, into=True, builder=step)
    step.insert(scf.YieldOp())
    if op.stops is not None:
        body.add_op(scf.YieldOp())
    length = op.scanned[0].type.get_shape()[0]  # type: ignore[union-attr]
    bounds = [builder.insert(arith.ConstantOp(IntegerAttr(n, IndexType()))).result for n in (0, length, 1)]
    builder.insert(scf.ForOp(*bounds, [], body))
    for buffer in (*slices, *nexts, *rows):
        builder.insert(memref.DeallocOp.get(buffer))


def _copy_position(
    source: SSAValue, dest: SSAValue, position: SSAValue, *, into: bool, builder: Builder
) -> None:
    """`dest` = `source`[position] (a row of a stacked buffer), or with `into`,
    `dest`[position] = `source`: a loop nest over the row's elements."""
    row = source if into else dest
    indices, inner, blocks = _element_loops(row.type.get_shape(), builder)  # type: ignore[union-attr]
    stacked = [position, *indices]
    element = inner.insert(memref.LoadOp.get(source, indices if into else stacked)).res
    inner.insert(memref.StoreOp.get(element, dest, stacked if into else indices))
    for block in blocks:
        block.add_op(scf.YieldOp())


def _zero_position(stacked: SSAValue, position: SSAValue, builder: Builder) -> None:
    """`stacked`[position] = 0 (a row of a stacked buffer): a loop nest over the row's
    elements."""
    element = stacked.type.element_type  # type: ignore[union-attr]
    value = FloatAttr(0.0, element) if isinstance(element, AnyFloat) else IntegerAttr(0, element)
    zero = builder.insert(arith.ConstantOp(value)).result
    indices, inner, blocks = _element_loops(stacked.type.get_shape()[1:], builder)  # type: ignore[union-attr]
    inner.insert(memref.StoreOp.get(zero, stacked, [position, *indices]))
    for block in blocks:
        block.add_op(scf.YieldOp())


def _element_loops(
    shape: Sequence[int | SSAValue], builder: Builder
) -> tuple[list[SSAValue], Builder, list[Block]]:
    """An scf.for nest over `shape` (inserted by `builder`; an extent is static or an
    index value): its induction variables, a builder at the end of the innermost body,
    and the bodies (each still to yield)."""
    indices: list[SSAValue] = []
    blocks: list[Block] = []
    inner = builder
    for extent in shape:
        zero, end, one = (
            n if isinstance(n, SSAValue) else inner.insert(
                arith.ConstantOp(IntegerAttr(n, IndexType()))
            ).result
            for n in (0, extent, 1)
        )
        block = Block(arg_types=[IndexType()])
        inner.insert(scf.ForOp(zero, end, one, [], block))
        inner = Builder(InsertPoint.at_end(block))
        indices.append(block.args[0])
        blocks.append(block)
    return indices, inner, blocks


def lower_row_blocks(
    op: te.CallOp,
    blocks: te.RowBlocks,
    types: Mapping[str, Sequence[Attribute]],
    buffers: Sequence[SSAValue],
    extents: RunTimeExtents,
    builder: Builder,
) -> None:
    """A te.call of a primitive that computes its rows apart (`te.ROW_BLOCKS_ATTR`),
    run as its blocks instead: the call's rows (the product of the leading run-time
    extents), as many blocks of the largest count as fit, then of the next, each a
    func.call of its static kernel on `loop.view`s of the rows of every buffer of
    run-time sizes (those of static shapes passed whole). The rows left, fewer than
    the smallest block of several rows, are one more such block ending at the last
    row when the call has that many rows (the rows it computes again are written
    again as they were: each row is computed from its own), else single rows; none
    are left when the rows are a multiple of the smallest block (`RowBlocks.multiple`,
    which the entry's bounds of the sizes make them). The blocks of the largest count
    are a `parallel` loop when every result has the rows (each block writes its own).
    `buffers` are the call's operands' buffers, then its results'; `types` the
    placeholder and output types of each block's primitive."""
    tensors = [*op.args, *op.res]
    rows_of = next(v for v in op.res if is_run_time(v.type))
    row_count = len(blocks.rows)
    rows = _index_value(builder, _product(builder, extents.of(rows_of)[:row_count]))

    def call_block(name: str, first: SSAValue, at: Builder) -> None:
        """A call of block `name` on the rows from `first`, inserted by `at`."""
        args: list[SSAValue] = []
        for tensor, buffer, block_type in zip(tensors, buffers, types[name], strict=True):
            if not is_run_time(tensor.type):
                args.append(buffer)
                continue
            assert isinstance(tensor.type, TensorType)
            offset = _product(at, [first, math.prod(tensor.type.get_shape()[row_count:])])
            assert isinstance(offset, SSAValue)
            view = at.insert(ViewOp(buffer, offset, _argument_type(block_type, op)))
            _set_name(view.result, buffer.name_hint)
            args.append(view.result)
        at.insert(func.CallOp(name, args, []))

    done: SSAValue | None = None  # the rows the blocks before cover (none yet)
    if blocks.multiple > 1:
        # rows a multiple of the smallest block (the sizes' bounds): none are left
        whole_blocks, single = list(blocks.blocks), None
    else:
        *whole_blocks, (_, single) = blocks.blocks
    for count, name in whole_blocks:
        left = rows if done is None else builder.insert(arith.SubiOp(rows, done)).result
        size = _index_value(builder, count)
        whole = builder.insert(arith.DivUIOp(left, size)).result
        if done is None and all(is_run_time(result.type) for result in op.res):
            # the blocks of the largest count: the threads take blocks (each block's
            # kernel then runs serially inside its task), each writing rows of its
            # own; a single one runs in the caller, its kernel's own parallel loops
            # taking the threads
            loop, body = ForOp.build(0, whole, 1, LoopKind.PARALLEL, f"{name}.blocks")
            builder.insert(loop)
            index, inner = loop.induction_var, Builder(InsertPoint.before(body.last_op))
        else:
            (index,), inner, (body,) = _element_loops([whole], builder)
            body.add_op(scf.YieldOp())
            inner = Builder(InsertPoint.before(body.last_op))
        first = inner.insert(arith.MuliOp(index, size)).result
        if done is not None:
            first = inner.insert(arith.AddiOp(done, first)).result
        call_block(name, first, inner)
        covered = builder.insert(arith.MuliOp(whole, size)).result
        done = covered if done is None else builder.insert(arith.AddiOp(done, covered)).result

    def single_rows(at: Builder) -> None:
        """The rows left, one by one."""
        left = rows if done is None else at.insert(arith.SubiOp(rows, done)).result
        (index,), inner, (body,) = _element_loops([left], at)
        first = index if done is None else inner.insert(arith.AddiOp(done, index)).result
        call_block(single, first, inner)
        body.add_op(scf.YieldOp())

    if single is None:
        return
    if not whole_blocks:
        single_rows(builder)
        return
    # fewer rows left than the smallest block: when the call has that many rows, one
    # block ending at its last row (recomputing rows before, which writes them again
    # as they are), else the rows one by one
    smallest, last = whole_blocks[-1]
    assert done is not None
    size = _index_value(builder, smallest)
    enough = builder.insert(arith.CmpiOp(rows, size, "uge")).result
    some = builder.insert(arith.CmpiOp(rows, done, "ne")).result
    overlap = builder.insert(arith.AndIOp(enough, some)).result
    then_block, else_block = Block(), Block()
    then_at = Builder(InsertPoint.at_end(then_block))
    call_block(last, then_at.insert(arith.SubiOp(rows, size)).result, then_at)
    then_at.insert(scf.YieldOp())
    else_at = Builder(InsertPoint.at_end(else_block))
    single_rows(else_at)
    else_at.insert(scf.YieldOp())
    builder.insert(scf.IfOp(overlap, [], Region(then_block), Region(else_block)))


def lower_cond_call(
    op: te.CondCallOp,
    condition: SSAValue,
    operands: Sequence[SSAValue],
    destinations: Sequence[SSAValue],
    builder: Builder,
) -> None:
    """te.cond_call %c, @f, @g(%a..) -> scf.if on the condition's one element, each
    branch calling its function with the arguments and the result buffers."""
    taken = _load_first(condition, builder)
    regions = []
    for branch in (True, False):
        block = Block()
        block.add_ops([func.CallOp(op.callee(branch), [*operands, *destinations], []), scf.YieldOp()])
        regions.append(Region(block))
    builder.insert(scf.IfOp(taken, [], regions[0], regions[1]))


def _is_tensor_function(op: func.FuncOp) -> bool:
    types = (*op.function_type.inputs.data, *op.function_type.outputs.data)
    return any(isinstance(t, TensorType) for t in types)


@dataclass
class Arena:
    """The intermediates of one function that graph-plan-memory placed in its arena:
    `size` bytes, and the byte offset of each placed value."""

    size: int
    offsets: dict[SSAValue, int]
    in_place: frozenset[Operation] = frozenset()
    """The calls of concatenations done in place: their inputs are where they read
    them, so they are not called."""

    @staticmethod
    def of(function: func.FuncOp, returned: Sequence[SSAValue]) -> Arena:
        """The checked plan recorded on `function` (`arena_bytes`) and its calls
        (`arena_offsets`, `in_place`); an empty arena when the function has no plan."""
        size_attr = function.attributes.get(ARENA_BYTES_ATTR)
        if size_attr is None:
            for op in function.body.block.ops:
                if IN_PLACE_ATTR in op.attributes:
                    raise StratoError(
                        f"'{op.name}' is marked {IN_PLACE_ATTR} but @{function.sym_name.data} "
                        "has no memory plan; rerun graph-plan-memory",
                        op=op,
                    )
            return Arena(0, {})
        name = function.sym_name.data
        if not isinstance(size_attr, IntegerAttr) or size_attr.value.data < 0:
            raise StratoError(
                f"@{name}: {ARENA_BYTES_ATTR} must be a non-negative integer, got {size_attr}",
                op=function,
            )
        size = size_attr.value.data
        block = function.body.block
        position = {op: n for n, op in enumerate(block.ops)}
        buffers: list[Buffer] = []
        for op in block.ops:
            for result, offset in zip(op.results, _planned_offsets(op), strict=True):
                if offset == -1 or tensor_bytes(result) == 0:
                    continue  # outside the arena (a zero-size tensor needs no bytes)
                _check_offset(op, offset, tensor_bytes(result), size, result in returned)
                start, end = lifetime(result, position)
                buffers.append(Buffer(result, tensor_bytes(result), start, end, offset))
        offsets = {b.value: b.offset for b in buffers}
        in_place = [op for op in block.ops if IN_PLACE_ATTR in op.attributes]
        for op in in_place:
            _check_in_place(op, offsets)
        clash = live_overlap(buffers, _in_place_groups(in_place))
        if clash is not None:
            first, second = clash
            raise StratoError(
                f"@{name}: the memory plan places two values alive at the same time at "
                f"overlapping bytes ({first.offset}..{first.offset + first.size} and "
                f"{second.offset}..{second.offset + second.size}); rerun graph-plan-memory",
                op=second.value.owner,  # type: ignore[arg-type]
            )
        return Arena(size, offsets, frozenset(in_place))


def _in_place_groups(in_place: Sequence[Operation]) -> dict[SSAValue, int]:
    """Each value an in-place concatenation reads or is -> a number naming the values
    connected to it by such concatenations (one group of the plan)."""
    parent: dict[SSAValue, SSAValue] = {}

    def root(value: SSAValue) -> SSAValue:
        while parent.setdefault(value, value) is not value:
            value = parent[value]
        return value

    for op in in_place:
        for operand in op.operands:
            parent[root(operand)] = root(op.results[0])
    roots: dict[SSAValue, int] = {}
    return {value: roots.setdefault(root(value), len(roots)) for value in list(parent)}


def _check_in_place(op: Operation, offsets: Mapping[SSAValue, int]) -> None:
    """A concatenation marked in place: its result and inputs are in the arena, each
    input at its run of the result's bytes."""
    if not _is_tensor_call(op) or len(op.results) != 1 or op.results[0] not in offsets:
        raise StratoError(
            f"only a call with one result in the arena can be {IN_PLACE_ATTR}", op=op
        )
    at = offsets[op.results[0]]
    for n, operand in enumerate(op.operands):
        if offsets.get(operand) != at:
            raise StratoError(
                f"the memory plan marks this concatenation {IN_PLACE_ATTR}, but its input "
                f"{n} is not at byte {at} of the arena (its run of the result); rerun "
                "graph-plan-memory",
                op=op,
            )
        at += tensor_bytes(operand)
    if at != offsets[op.results[0]] + tensor_bytes(op.results[0]):
        raise StratoError(
            f"an {IN_PLACE_ATTR} concatenation's inputs must fill its result", op=op
        )


def _planned_offsets(op: Operation) -> list[int]:
    """The `arena_offsets` of a call, one per result; -1 for each result of an op
    without a plan."""
    attr = op.attributes.get(ARENA_OFFSETS_ATTR)
    if attr is None or not _is_tensor_call(op):
        return [-1] * len(op.results)
    if not isinstance(attr, DenseArrayBase) or attr.elt_type != i64:
        raise StratoError(f"{ARENA_OFFSETS_ATTR} must be an array<i64>, got {attr}", op=op)
    offsets = [int(v) for v in attr.get_values()]
    if len(offsets) != len(op.results):
        raise StratoError(
            f"{ARENA_OFFSETS_ATTR} has {len(offsets)} entries for {len(op.results)} results",
            op=op,
        )
    return offsets


def _check_offset(op: Operation, offset: int, size: int, arena_bytes: int, returned: bool) -> None:
    if returned:
        raise StratoError(
            f"{ARENA_OFFSETS_ATTR} places a returned value at {offset}: function results "
            "live in the caller's buffers (offset -1); rerun graph-plan-memory",
            op=op,
        )
    if offset < 0 or offset % ALIGNMENT != 0:
        raise StratoError(
            f"arena offset {offset} is not a multiple of {ALIGNMENT} (or -1)", op=op
        )
    if offset + size > arena_bytes:
        raise StratoError(
            f"a value of {size} bytes at arena offset {offset} ends past the arena's "
            f"{arena_bytes} bytes",
            op=op,
        )


@dataclass
class FunctionLowering:
    """func.func @f(tensors..) -> (tensors..) -> func.func @f(memrefs.., outs.. {loop.output})."""

    names: SymbolNames
    # the primitives of run-time sizes, by name (collected before they are lowered)
    signatures: dict[str, SizeSignature] = field(default_factory=dict)
    # those run as blocks of rows (te.ROW_BLOCKS_ATTR), and every primitive's
    # placeholder and output types, by name
    row_blocks: dict[str, te.RowBlocks] = field(default_factory=dict)
    block_types: dict[str, list[Attribute]] = field(default_factory=dict)

    def lower(self, function: func.FuncOp) -> func.FuncOp:
        name = function.sym_name.data
        ftype = function.function_type
        for result_type in ftype.outputs.data:
            if not isinstance(result_type, TensorType):
                raise StratoError(
                    f"{PASS_NAME} lowers functions returning tensors only; @{name} "
                    f"returns {result_type}",
                    op=function,
                )
        input_types = [
            _argument_type(t, function) if isinstance(t, TensorType) else t
            for t in ftype.inputs.data
        ]
        output_types = [_argument_type(t, function) for t in ftype.outputs.data]
        input_attrs = (
            list(function.arg_attrs.data)
            if function.arg_attrs is not None
            else [DictionaryAttr({})] * len(input_types)
        )
        output_attrs = _output_arg_attrs([], len(output_types)).data
        if function.res_attrs is not None:
            output_attrs = tuple(
                DictionaryAttr(out.data | res.data)
                for out, res in zip(output_attrs, function.res_attrs.data, strict=True)
            )
        # a flat buffer of run-time size keeps the shape of its tensor (SHAPE_ATTR)
        types = [*ftype.inputs.data, *ftype.outputs.data]
        input_attrs, output_attrs = (
            [_with_shape(attr, type_) for attr, type_ in zip(attrs, kinds, strict=True)]
            for attrs, kinds in ((input_attrs, types[: len(input_types)]), (output_attrs, types[len(input_types) :]))
        )
        size_names = function_size_names(function)
        lowered = func.FuncOp(
            name,
            (input_types + output_types + [IndexType()] * len(size_names), []),
            Region.DEFAULT if function.body.blocks else Region(),
            function.sym_visibility,
            arg_attrs=ArrayAttr([
                *input_attrs,
                *output_attrs,
                *[DictionaryAttr({SIZE_ATTR: StringAttr(n)}) for n in size_names],
            ]),
        )
        lowered.attributes |= function.attributes
        if function.body.blocks:
            self._lower_body(function, lowered, len(input_types), size_names)
        return lowered

    def _lower_body(
        self,
        function: func.FuncOp,
        lowered: func.FuncOp,
        input_count: int,
        size_names: Sequence[str] = (),
    ) -> None:
        name = function.sym_name.data
        if len(function.body.blocks) != 1:
            raise StratoError(f"{PASS_NAME} expects @{name} to have a single block", op=function)
        block = function.body.block
        ret = block.last_op
        if not isinstance(ret, func.ReturnOp):
            raise StratoError(f"@{name} does not end with func.return", op=function)
        args = lowered.body.block.args
        size_count = len(size_names)
        in_args = args[:input_count]
        out_args = args[input_count : len(args) - size_count]
        values: dict[SSAValue, SSAValue] = {}
        for old, new in zip(block.args, in_args):
            _set_name(new, old.name_hint)
            values[old] = new
        # the run-time extents of each tensor, by the sizes the function takes
        named = dict(zip(size_names, args[len(args) - size_count :], strict=True))
        for size_name, arg in named.items():
            _set_name(arg, size_name)
        extents = RunTimeExtents(named)
        for n, old in enumerate(block.args):
            extents.of_argument(function, n, old)

        # A returned call result is written in place: the call gets the output buffer.
        returned = list(ret.arguments)
        in_place: dict[SSAValue, SSAValue] = {}
        for n, (value, arg) in enumerate(zip(returned, out_args)):
            if (
                isinstance(value, OpResult)
                and _is_tensor_call(value.owner)
                and value not in in_place
            ):
                in_place[value] = arg
                _set_name(arg, value.name_hint or f"out{n}")
            else:
                _set_name(arg, f"out{n}")

        last_use: dict[SSAValue, Operation] = {}
        for op in block.ops:
            for operand in op.operands:
                last_use[operand] = op

        builder = Builder(InsertPoint.at_end(lowered.body.block))
        constants = ConstantOpLowering(self.names)
        calls = CallOpLowering()
        arena = Arena.of(function, returned)
        arena_buffer = self._allocate_arena(arena, builder)
        allocated: list[SSAValue] = []
        heap = [] if arena_buffer is None else [arena_buffer]  # every buffer allocated here
        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                for value, arg in zip(returned, out_args):
                    if in_place.get(value) is not arg:
                        extents.copy(value, values[value], arg, builder)
                if arena_buffer is not None:
                    builder.insert(memref.DeallocOp.get(arena_buffer))
                builder.insert(func.ReturnOp())
                break
            if isinstance(op, arith.ConstantOp) and isinstance(op.result.type, TensorType):
                values[op.result] = constants.lower(op, function, builder)
            elif op in arena.in_place:
                # its inputs were written where it reads: its result is their bytes
                (result,) = op.results
                values[result] = self._view(arena_buffer, arena.offsets[result], result, op, builder)
            elif _is_tensor_call(op):
                if isinstance(op, te.CallOp):
                    extents.bind_call(op, self.signatures.get(op.callee.string_value()), builder)
                destinations = []
                for result in op.results:
                    dest = in_place.get(result)
                    if dest is None and arena_buffer is not None and result in arena.offsets:
                        dest = self._view(arena_buffer, arena.offsets[result], result, op, builder)
                    if dest is None:
                        alloc = extents.alloc(result, op, builder)
                        _set_name(alloc, result.name_hint)
                        dest = alloc
                        allocated.append(result)
                        heap.append(alloc)
                    values[result] = dest
                    destinations.append(dest)
                if not isinstance(op, te.CallOp | func.CallOp) and extents.any_run_time(op):
                    raise StratoError(
                        f"{PASS_NAME} lowers '{op.name}' over tensors of static shapes only",
                        op=op,
                    )
                if isinstance(op, te.LoopCallOp):
                    lower_loop_call(op, values, destinations, builder)
                elif isinstance(op, te.ScanCallOp):
                    lower_scan_call(op, values, destinations, builder)
                elif isinstance(op, te.CondCallOp):
                    lower_cond_call(
                        op, values[op.condition], [values[v] for v in op.args], destinations,
                        builder,
                    )  # fmt: skip
                elif isinstance(op, te.CallOp) and op.callee.string_value() in self.row_blocks:
                    lower_row_blocks(
                        op, self.row_blocks[op.callee.string_value()], self.block_types,
                        [*(values[v] for v in op.operands), *destinations], extents, builder,
                    )  # fmt: skip
                else:
                    assert isinstance(op, te.CallOp | func.CallOp)
                    sizes = extents.of_call(op, builder)
                    calls.lower(
                        op, [values[v] for v in op.operands], destinations, builder, sizes
                    )
            elif op.regions or _has_tensor_type(op):
                raise StratoError(
                    f"{PASS_NAME} cannot lower '{op.name}' in @{name}: functions over "
                    "tensors hold te.call, func.call and dense constants",
                    op=op,
                )
            else:
                builder.insert(op.clone(values))
            # free intermediates after their last use (right away when unused)
            for value in [v for v in allocated if last_use.get(v, op) is op]:
                builder.insert(memref.DeallocOp.get(values[value]))
                allocated.remove(value)
        share_one_arena(lowered, heap)

    @staticmethod
    def _allocate_arena(arena: Arena, builder: Builder) -> SSAValue | None:
        """One buffer for every planned intermediate, when there is one."""
        if not arena.offsets:
            return None
        type_ = MemRefType(i8, [arena.size])
        alloc = builder.insert(memref.AllocOp([], [], type_, IntegerAttr(ALIGNMENT, i64)))
        alloc.memref.name_hint = "arena"
        return alloc.memref

    @staticmethod
    def _view(
        arena: SSAValue, offset: int, value: SSAValue, op: Operation, builder: Builder
    ) -> SSAValue:
        """The buffer of `value`: the arena's bytes from `offset`."""
        shift = builder.insert(arith.ConstantOp(IntegerAttr(offset, IndexType())))
        shift.result.name_hint = "offset"
        view = builder.insert(memref.ViewOp(arena, shift, [], memref_for(value.type, op)))
        _set_name(view.result, value.name_hint)
        return view.result


def share_one_arena(function: func.FuncOp, buffers: Sequence[SSAValue]) -> None:
    """When some of `buffers` (the heap buffers a function over tensors allocates in
    its block and frees there: its arena and its intermediates) have run-time sizes,
    make them all views of one arena of run-time size, allocated at the function's
    start and freed before its return: one allocation per call instead of one per
    intermediate. Each buffer's offset is computed from the sizes at the start: the
    buffers take slots in the order they are allocated, each a slot whose buffers were
    all freed before (one of its own size, when there is one: a slot is as large as
    the largest it holds), else a new one; the slots follow each other in the arena,
    each buffer's bytes rounded up to `ALIGNMENT`. So two buffers alive at once never
    share a byte, whatever the sizes, and the arena holds as many slots as buffers are
    ever alive at once."""
    block = function.body.block
    found: list[tuple[memref.AllocOp, memref.DeallocOp]] = []
    for buffer in buffers:
        alloc = buffer.owner
        frees = [use.operation for use in buffer.uses if isinstance(use.operation, memref.DeallocOp)]
        if not isinstance(alloc, memref.AllocOp) or len(frees) != 1:
            continue
        if alloc.parent_block() is block and frees[0].parent_block() is block:
            found.append((alloc, frees[0]))
    if not any(alloc.dynamic_sizes for alloc, _ in found):
        return
    position = {op: n for n, op in enumerate(block.ops)}
    first = block.first_op
    assert first is not None
    at = Builder(InsertPoint.before(first))
    hoisted: dict[object, SSAValue] = {}  # by the expression computed

    def expression(value: SSAValue) -> object | None:
        """What `value` computes from the function's arguments and constants (nested
        tuples: equal when the values are), or None when it is not computed from
        them alone."""
        owner = value.owner
        if isinstance(owner, Block):
            return ("argument", value.index) if owner is block else None  # type: ignore[attr-defined]
        if isinstance(owner, arith.ConstantOp):
            return ("constant", owner.value)
        if owner.parent_block() is not block or not isinstance(
            owner, arith.AddiOp | arith.MuliOp | arith.SubiOp | arith.DivUIOp
        ):
            return None
        operands = [expression(operand) for operand in owner.operands]
        return None if None in operands else (owner.name, *operands)

    def hoist(value: SSAValue) -> SSAValue:
        """`value` (an `expression`) computed at the function's start, once."""
        key = expression(value)
        if key in hoisted:
            return hoisted[key]
        owner = value.owner
        if isinstance(owner, Block):
            return value
        mapping = {operand: hoist(operand) for operand in owner.operands}
        hoisted[key] = at.insert(owner.clone(value_mapper=mapping)).results[0]
        return hoisted[key]

    def index(value: int | SSAValue) -> SSAValue:
        return value if isinstance(value, SSAValue) else at.insert(arith.ConstantOp(IntegerAttr(value, IndexType()))).result

    def combine(kind, a: int | SSAValue, b: int | SSAValue) -> int | SSAValue:
        if isinstance(a, int) and isinstance(b, int):
            return {arith.AddiOp: a + b, arith.MaxUIOp: max(a, b), arith.MuliOp: a * b}[kind]
        if kind is not arith.MuliOp and 0 in (a, b):  # a sum or maximum of sizes with 0
            return b if a == 0 else a
        return at.insert(kind(index(a), index(b))).result

    sizes: dict[tuple[object, int], int | SSAValue] = {}

    def size_key(alloc: memref.AllocOp) -> tuple[object, int] | None:
        """The size of `alloc`'s buffer: the expression of its run-time count of rows
        (None for a static shape) and the bytes of a row (of the whole buffer); None
        when the count is not an expression of the arguments."""
        type_ = alloc.memref.type
        assert isinstance(type_, MemRefType)
        element = _element_bytes(type_.element_type)
        if not alloc.dynamic_sizes:
            return None, math.prod(type_.get_shape()) * element
        count = expression(alloc.dynamic_sizes[0])
        if len(alloc.dynamic_sizes) != 1 or count is None:
            return None
        return count, math.prod(type_.get_shape()[1:]) * element

    def aligned_bytes(alloc: memref.AllocOp, key: tuple[object, int]) -> int | SSAValue:
        """The bytes of `alloc`'s buffer rounded up to `ALIGNMENT`, computed once per size."""
        if key not in sizes:
            count, row = key
            if count is None:
                sizes[key] = -(-max(row, 1) // ALIGNMENT) * ALIGNMENT
            else:
                bytes_ = combine(arith.AddiOp, combine(arith.MuliOp, hoist(alloc.dynamic_sizes[0]), row), ALIGNMENT - 1)
                rounded = at.insert(arith.DivUIOp(index(bytes_), index(ALIGNMENT))).result
                sizes[key] = combine(arith.MuliOp, rounded, ALIGNMENT)
        return sizes[key]

    # slots: the buffers of each are never alive at once; a slot is as large as its
    # largest, and the slots follow each other in the arena
    slots: list[_Slot] = []
    slot_of: dict[memref.AllocOp, _Slot] = {}
    for alloc, free in found:
        key = size_key(alloc)
        if key is None:
            continue
        size = aligned_bytes(alloc, key)
        free_slots = [slot for slot in slots if slot.free_after < position[alloc]]
        same = [slot for slot in free_slots if key in slot.keys]
        if same or free_slots:
            slot = (same or free_slots)[0]
            if key not in slot.keys:
                slot.size = combine(arith.MaxUIOp, slot.size, size)
                slot.keys.add(key)
        else:
            slot = _Slot(size, {key})
            slots.append(slot)
        slot.free_after = position[free]
        slot_of[alloc] = slot
    end: int | SSAValue = 0
    for slot in slots:
        slot.offset = end
        end = combine(arith.AddiOp, end, slot.size)
    # (the offsets made before any buffer goes: the start may be the static arena's)
    placed = [(alloc, free, index(slot_of[alloc].offset)) for alloc, free in found if alloc in slot_of]
    arena = at.insert(memref.AllocOp([index(end)], [], MemRefType(i8, [DYNAMIC_INDEX]), IntegerAttr(ALIGNMENT, i64)))
    arena.memref.name_hint = "arena"
    for alloc, free, offset in placed:
        view = memref.ViewOp(arena.memref, offset, list(alloc.dynamic_sizes), alloc.memref.type)
        _set_name(view.result, alloc.memref.name_hint)
        block.insert_op_before(view, alloc)
        alloc.memref.replace_all_uses_with(view.result)
        free.detach()
        free.erase()
        alloc.detach()
        alloc.erase()
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp)
    block.insert_op_before(memref.DeallocOp.get(arena.memref), ret)


@dataclass
class _Slot:
    """Bytes of `share_one_arena`'s arena that buffers never alive at once take in
    turn: as many as the largest needs (`keys`: the size each needs, by its run-time
    count and static bytes), from `offset`; free after the op at `free_after`."""

    size: int | SSAValue
    keys: set[tuple[object, int]]
    free_after: int = -1
    offset: int | SSAValue = 0


def _element_bytes(type_: Attribute) -> int:
    """The bytes of one element of a buffer of element type `type_`."""
    if isinstance(type_, IndexType):
        return 8
    width = getattr(type_, "bitwidth", None) or type_.width.data  # type: ignore[attr-defined]
    return max(1, -(-width // 8))


# ---------------------------------------------------------------------------------------
# The pass


def lower_te_to_loops(module: ModuleOp) -> None:
    """Lower every primitive and every function over tensors of `module` in place."""
    names = SymbolNames(module)
    primitives = PrimitiveOpLowering()
    functions = FunctionLowering(names)
    all_primitives = {op.sym_name.data: op for op in module.ops if isinstance(op, te.PrimitiveOp)}
    for name, op in all_primitives.items():
        functions.block_types[name] = [*op.input_types, *op.output_types]
        if op.run_time_sizes:
            functions.signatures[name] = SizeSignature.of(op)
            blocks = te.RowBlocks.of(op)
            if blocks is not None:
                _check_row_blocks(op, blocks, functions.signatures[name], all_primitives)
                functions.row_blocks[name] = blocks
    # a concatenation done in place, and a primitive run as its blocks of rows: no kernel
    uncalled = _called_in_place_only(module) | set(functions.row_blocks)
    _check_run_time_primitives_not_called(module)
    for op in list(module.ops):
        if isinstance(op, te.PrimitiveOp) and op.sym_name.data in uncalled:
            module.body.block.detach_op(op)
            op.erase(safe_erase=False)
            continue
        if isinstance(op, te.PrimitiveOp):
            lowered = primitives.lower(op)
        elif isinstance(op, func.FuncOp) and (_is_tensor_function(op) or _calls_te(op)):
            lowered = functions.lower(op)
        else:
            continue
        module.body.block.insert_op_before(lowered, op)
        module.body.block.detach_op(op)
        op.erase(safe_erase=False)


def _check_row_blocks(
    primitive: te.PrimitiveOp,
    blocks: te.RowBlocks,
    signature: SizeSignature,
    primitives: Mapping[str, te.PrimitiveOp],
) -> None:
    """The blocks a primitive names compute its rows: each a primitive of static shapes
    whose placeholders and outputs are the dynamic one's with its rows (the leading
    run-time dimensions, the same in every tensor of run-time sizes) made a block of
    that many (1 .. 1 x count); anything else is refused by name."""
    where = f"{PASS_NAME}: @{primitive.sym_name.data}'s {te.ROW_BLOCKS_ATTR}"
    rows = list(blocks.rows)
    dims = [*signature.inputs, *signature.outputs]
    for shape in dims:
        names = [d for d in shape if isinstance(d, str)]
        if names and (names != rows or shape[: len(rows)] != rows):
            raise StratoError(
                f"{where}: a tensor of dimensions {shape} does not lead with the rows "
                f"{rows} alone",
                op=primitive,
            )
    for count, name in blocks.blocks:
        block = primitives.get(name)
        if block is None or block.run_time_sizes:
            raise StratoError(
                f"{where}: @{name} is not a primitive of static shapes", op=primitive
            )
        expected = [
            [*([1] * (len(rows) - 1)), count, *shape[len(rows) :]]
            if any(isinstance(d, str) for d in shape)
            else shape
            for shape in dims
        ]
        found = [list(t.get_shape()) for t in (*block.input_types, *block.output_types)]
        if found != expected:
            raise StratoError(
                f"{where}: @{name} takes shapes {found}, not the block of {count} rows "
                f"{expected}",
                op=primitive,
            )


def _check_run_time_primitives_not_called(module: ModuleOp) -> None:
    """A primitive with run-time sizes is called by te.call, which passes the sizes on;
    any other reference to it (a control-flow call's) is refused by name."""
    run_time = {
        op.sym_name.data for op in module.ops if isinstance(op, te.PrimitiveOp) and op.run_time_sizes
    }
    if not run_time:
        return
    for op in module.walk():
        if isinstance(op, te.CallOp):
            continue  # a function over tensors passes the sizes on
        for attr in op.properties.values():
            if isinstance(attr, SymbolRefAttr) and attr.root_reference.data in run_time:
                raise StratoError(
                    f"{PASS_NAME}: @{attr.root_reference.data} has run-time sizes (te.size): "
                    "it is compiled as a kernel of its own, not called from a function",
                    op=op,
                )


def _called_in_place_only(module: ModuleOp) -> set[str]:
    """The primitives every call of which is marked in place (and so not made)."""
    in_place: set[str] = set()
    other: set[str] = set()
    for op in module.walk():
        if isinstance(op, te.CallOp):
            name = op.callee.string_value()
            (in_place if IN_PLACE_ATTR in op.attributes else other).add(name)
    return in_place - other


def lower_te_text(text: str) -> ModuleOp:
    """The loop-level module of te text (one primitive: an intrinsic's description),
    parsed with strato's dialects and lowered by `lower_te_to_loops`."""
    from xdsl.parser import Parser

    from strato.context import make_context

    module = Parser(make_context(), text).parse_module()
    lower_te_to_loops(module)
    return module


def _calls_te(function: func.FuncOp) -> bool:
    return any(op.name.startswith("te.") for op in function.walk())


def is_loop_level(op: Operation) -> bool:
    """The legality rule after the pass: no te op, no tensor-typed value or function."""
    if op.name.startswith("te."):
        return False
    if isinstance(op, func.FuncOp) and _is_tensor_function(op):
        return False
    values = [*op.operands, *op.results]
    values += [arg for region in op.regions for block in region.blocks for arg in block.args]
    return not any(isinstance(v.type, TensorType) for v in values)


@dataclass(frozen=True)
class ConvertTeToLoopsPass(ModulePass):
    """Lower te primitives to loop-nest kernels and tensor functions to buffer functions.

    See the module docstring for the loop-level ABI and an example."""

    name = "convert-te-to-loops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_te_to_loops(op)
        check_legal(op, self.name, legal_dialects=(), is_legal=is_loop_level)


__all__ = [
    "Arena",
    "ComputeOpLowering",
    "ConstantOpLowering",
    "CallOpLowering",
    "ConvertTeToLoopsPass",
    "FunctionLowering",
    "KERNEL_ATTR",
    "OUTPUT_ATTR",
    "PrimitiveOpLowering",
    "ReadOpLowering",
    "ReduceOpLowering",
    "is_loop_level",
    "STAGE_ATTR",
    "lower_stage_body",
    "lower_te_text",
    "lower_te_to_loops",
    "memref_for",
]
