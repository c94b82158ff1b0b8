"""Hypothesis strategies for random small graph-level programs.

`graph_programs()` draws a module holding one function `@main` built from a random
sequence of graph ops over small static shapes, with random constant weights, together
with the shapes of its inputs. Property tests interpret it before and after a pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

try:
    from hypothesis import strategies as st
except ImportError as err:  # the test extra is not installed
    from strato.testing import HYPOTHESIS_MISSING

    raise ImportError(HYPOTHESIS_MISSING) from err

from xdsl.dialects import func
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f32,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from strato.dialects import graph
from strato.dialects.tensor_types import numpy_dtype
from strato.testing.arrays import edge_array, random_array
from strato.testing.op_generators import ALL_GRAPH_OPS, OP_GENERATORS, ProgramBuilder

DIM = st.integers(min_value=1, max_value=5)


@dataclass
class GraphProgram:
    module: ModuleOp
    input_shapes: list[tuple[int, ...]]
    input_dtypes: list[np.dtype] | None = None
    """The numpy dtype of each input (float32 for all when None)."""

    def __repr__(self) -> str:
        from strato.testing.equivalence import ir_text

        return f"GraphProgram(input_shapes={self.input_shapes}):\n{ir_text(self.module)}"

    def _dtypes(self) -> list[np.dtype]:
        return self.input_dtypes or [np.dtype(np.float32)] * len(self.input_shapes)

    def random_inputs(self, seed: int) -> list[np.ndarray]:
        """Standard-normal floats (random booleans, small integers)."""
        rng = np.random.default_rng(seed)
        return [random_array(rng, s, d) for s, d in zip(self.input_shapes, self._dtypes())]

    def edge_inputs(self, seed: int, nonfinite: bool = True) -> list[np.ndarray]:
        """Inputs mixing edge values into random ones: zeros, negatives, +-1, large
        magnitudes, NaN and +-Inf (floats, when `nonfinite`), the extremes of integers."""
        rng = np.random.default_rng(seed)
        return [
            edge_array(rng, s, d, nonfinite) for s, d in zip(self.input_shapes, self._dtypes())
        ]


def _shape_of(value: SSAValue) -> tuple[int, ...]:
    assert isinstance(value.type, TensorType)
    return value.type.get_shape()


GRAPH_OP_KINDS = ("add", "mul", "relu", "dense", "matmul", "transpose")
"""The six op kinds of the first generator (short names; still accepted as kinds)."""

ALL_KINDS: tuple[str, ...] = ALL_GRAPH_OPS
"""Every registered graph op, by op name: what `graph_programs` draws by default."""

INFERENCE_OP_KINDS = (
    *GRAPH_OP_KINDS,
    "identity",
    "dropout",
    "reshape",
    "transpose_pair",
    "batch_norm",
    "dense_batch_norm",
    "bias_add",
    "matmul_bias",
)
"""More kinds, for the inference simplifications: pass-through ops, chains of
reshapes and transposes, batch normalization (alone and after a dense layer), bias
vectors added to dense and matmul results."""


@st.composite
def graph_programs(
    draw: st.DrawFn, max_ops: int = 5, kinds: Sequence[str] = ALL_KINDS
) -> GraphProgram:
    """A program of 1..`max_ops` ops drawn from `kinds`: op names of registered graph
    ops (see `strato.testing.op_generators`) or the short kinds of GRAPH_OP_KINDS and
    INFERENCE_OP_KINDS. Ops with a generator may add function arguments of their own
    (integer or boolean ones too, see `GraphProgram.input_dtypes`)."""
    rank = draw(st.integers(min_value=1, max_value=3))
    base_shape = tuple(draw(st.lists(DIM, min_size=rank, max_size=rank)))
    input_shapes = [base_shape]
    if draw(st.booleans()):
        # a second input that broadcasts against the first
        input_shapes.append(tuple(draw(st.sampled_from([1, d])) for d in base_shape))
    block = Block(arg_types=[TensorType(f32, s) for s in input_shapes])
    values: list[SSAValue] = list(block.args)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    functions: list[Operation] = []  # the functions graph.cond_call and graph.loop_call call

    def constant(shape: tuple[int, ...]) -> SSAValue:
        op = graph.ConstantOp.from_array(rng.standard_normal(shape).astype(np.float32))
        block.add_op(op)
        return op.result

    for _ in range(draw(st.integers(min_value=1, max_value=max_ops))):
        x = draw(st.sampled_from(values))
        shape = _shape_of(x)
        if draw(st.integers(0, 4)) == 0:
            # an all-constant operand, so that constant subgraphs occur
            x = constant(shape)
        kind = draw(st.sampled_from(list(kinds)))
        if kind in OP_GENERATORS:
            builder = ProgramBuilder(draw, block, rng, values, functions=functions)
            try:
                drawn = OP_GENERATORS[kind](builder)
            except (ValueError, TypeError, IndexError, ZeroDivisionError, VerifyException):
                drawn = None  # operands the drawer cannot use: a relu instead
            op = drawn if drawn is not None else graph.ReluOp(builder.float_value())
            block.add_op(op)
            values.extend(op.results)
            continue
        if kind in ("add", "mul"):
            partners = [v for v in values if graph.broadcast_shapes(shape, _shape_of(v))]
            if draw(st.booleans()) or not partners:
                y = constant(tuple(draw(st.sampled_from([1, d])) for d in shape))
            else:
                y = draw(st.sampled_from(partners))
            op = (graph.AddOp if kind == "add" else graph.MulOp)(x, y)
        elif kind == "relu":
            op = graph.ReluOp(x)
        elif kind == "dense":
            units = draw(DIM)
            bias = constant((units,)) if draw(st.booleans()) else None
            op = graph.DenseOp(x, constant((units, shape[-1])), bias)
        elif kind == "matmul" and len(shape) >= 2:
            op = graph.MatmulOp(x, constant((shape[-1], draw(DIM))))
        elif kind == "transpose":
            perm = draw(st.permutations(range(len(shape))))
            op = graph.TransposeOp(x, perm)
        elif kind in INFERENCE_OP_KINDS[len(GRAPH_OP_KINDS) :]:
            op = _inference_op(draw, kind, x, block, rng, constant)
        else:
            op = graph.ReluOp(x)
        block.add_op(op)
        values.append(op.results[0])

    result = values[-1]
    block.add_op(func.ReturnOp(result))
    arg_types = [arg.type for arg in block.args]
    function = func.FuncOp("main", (arg_types, [result.type]), Region(block))
    shapes = [_shape_of(arg) for arg in block.args]
    dtypes = [numpy_dtype(t.element_type) for t in arg_types]  # type: ignore[attr-defined]
    return GraphProgram(ModuleOp([function, *functions]), shapes, dtypes)


def _batch_norm_params(
    block: Block, rng: np.random.Generator, channels: int
) -> list[SSAValue]:
    """Constant scale, bias, mean and a positive variance for `channels` channels."""
    arrays = [
        rng.uniform(0.5, 1.5, channels),
        rng.standard_normal(channels),
        rng.standard_normal(channels),
        rng.uniform(0.5, 2.0, channels),
    ]
    ops = [graph.ConstantOp.from_array(a.astype(np.float32)) for a in arrays]
    for op in ops:
        block.add_op(op)
    return [op.result for op in ops]


def _inference_op(
    draw: st.DrawFn,
    kind: str,
    x: SSAValue,
    block: Block,
    rng: np.random.Generator,
    constant: Callable[[tuple[int, ...]], SSAValue],
) -> Operation:
    """One op of the kinds only INFERENCE_OP_KINDS has. Ops it depends on are appended
    to `block`; the returned op is appended by the caller."""
    shape = _shape_of(x)
    if kind == "identity":
        return graph.IdentityOp(x)
    if kind == "dropout":
        return graph.DropoutOp(x, draw(st.sampled_from([None, 0.5])))
    if kind == "reshape":
        # one reshape (the dims reordered), sometimes followed by a flatten
        first = graph.ReshapeOp(x, draw(st.permutations(shape)))
        if draw(st.booleans()):
            return first
        block.add_op(first)
        return graph.ReshapeOp(first, (int(np.prod(shape)),))
    if kind == "transpose_pair":
        first = graph.TransposeOp(x, draw(st.permutations(range(len(shape)))))
        block.add_op(first)
        if draw(st.booleans()):
            # the inverse permutation, so that the pair cancels
            return graph.TransposeOp(first, [int(p) for p in np.argsort(first.permutation)])
        return graph.TransposeOp(first, draw(st.permutations(range(len(shape)))))
    if kind == "bias_add":
        vector = constant((1,) * draw(st.integers(0, len(shape) - 1)) + (shape[-1],))
        return graph.AddOp(x, vector) if draw(st.booleans()) else graph.AddOp(vector, x)
    if kind == "matmul_bias" and len(shape) >= 2:
        units = draw(DIM)
        product = graph.MatmulOp(x, constant((shape[-1], units)))
        block.add_op(product)
        return graph.AddOp(product, constant((units,)))
    if kind == "batch_norm" and len(shape) >= 2:
        return graph.BatchNormOp(x, *_batch_norm_params(block, rng, shape[1]), epsilon=1e-3)
    if kind == "dense_batch_norm":
        if len(shape) != 2:
            flat = graph.ReshapeOp(x, (1, int(np.prod(shape))))
            block.add_op(flat)
            x = flat.result
        units = draw(DIM)
        bias = constant((units,)) if draw(st.booleans()) else None
        dense = graph.DenseOp(x, constant((units, _shape_of(x)[-1])), bias)
        block.add_op(dense)
        return graph.BatchNormOp(dense, *_batch_norm_params(block, rng, units), epsilon=1e-3)
    return graph.ReluOp(x)


CONV_OP_KINDS = (
    "conv",
    "depthwise_conv",
    "batch_norm",
    "relu",
    "clip",
    "residual_add",
    "channel_scale",
    "channel_shift",
    "max_pool",
    "avg_pool",
    "global_avg_pool",
    "identity",
    "dropout",
)
"""The op kinds of `conv_programs` by default; "channel_concat" (a concatenation along
the channels with an earlier value of the same batch and spatial size) and
"spatial_mean" (a mean over H and W keeping them) are two more."""


@st.composite
def conv_programs(
    draw: st.DrawFn,
    max_ops: int = 6,
    channels: Sequence[int] = (3, 4, 8),
    kinds: Sequence[str] = CONV_OP_KINDS,
) -> GraphProgram:
    """A small convolutional network on one NCHW input: convolutions (dense and
    depthwise), batch normalization, activations, residual adds, per-channel scales
    and shifts, pooling and pass-through ops, sometimes ending in flatten + dense. It
    returns its last value and sometimes an earlier one too."""
    input_shape = (
        draw(st.integers(1, 2)),
        draw(st.sampled_from(list(channels))),
        draw(st.integers(3, 7)),
        draw(st.integers(3, 7)),
    )
    block = Block(arg_types=[TensorType(f32, input_shape)])
    values: list[SSAValue] = list(block.args)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))

    def constant(array: np.ndarray) -> SSAValue:
        op = graph.ConstantOp.from_array(np.asarray(array, dtype=np.float32))
        block.add_op(op)
        return op.result

    for _ in range(draw(st.integers(min_value=1, max_value=max_ops))):
        # mostly the latest value, so that chains form
        x = values[-1] if draw(st.integers(0, 2)) else draw(st.sampled_from(values))
        _, c, h, w = _shape_of(x)
        kind = draw(st.sampled_from(list(kinds)))
        op: Operation
        if kind in ("conv", "depthwise_conv"):
            kernel = draw(st.sampled_from([k for k in (1, 3) if k <= min(h, w) + 2]))
            pad = draw(st.integers(0, 1)) if kernel == 3 else 0
            if kernel > min(h, w) + 2 * pad:
                pad = 1  # a 3x3 window needs the padding to fit
            stride = draw(st.integers(1, 2))
            depthwise = kind == "depthwise_conv"
            out = c if depthwise else draw(st.sampled_from(list(channels)))
            per_group = 1 if depthwise else c
            weight = rng.standard_normal((out, per_group, kernel, kernel)) / np.sqrt(
                per_group * kernel * kernel
            )
            bias = constant(rng.standard_normal(out)) if draw(st.booleans()) else None
            op = graph.ConvOp(
                x,
                constant(weight),
                bias,
                strides=(stride, stride),
                padding=(pad,) * 4,
                groups=c if depthwise else 1,
            )
        elif kind == "batch_norm":
            op = graph.BatchNormOp(x, *_batch_norm_params(block, rng, c), epsilon=1e-3)
        elif kind == "clip":
            op = graph.ClipOp(x, 0.0, 6.0)
        elif kind == "residual_add" and (
            partners := [v for v in values if v is not x and _shape_of(v) == _shape_of(x)]
        ):
            op = graph.AddOp(x, draw(st.sampled_from(partners)))
        elif kind == "channel_concat" and (
            partners := [v for v in values if _batch_and_space(v) == _batch_and_space(x)]
        ):
            # DenseNet's and SqueezeNet's joins: channels of branches side by side
            partner = draw(st.sampled_from(partners))
            op = graph.ConcatOp([x, partner] if draw(st.booleans()) else [partner, x], 1)
        elif kind in ("channel_scale", "channel_shift", "residual_add"):
            shape = draw(st.sampled_from([(c, 1, 1), (1, c, 1, 1), (), (1,)]))
            operand = constant(rng.uniform(0.5, 1.5, shape))
            binary = graph.MulOp if kind == "channel_scale" else graph.AddOp
            op = binary(x, operand) if draw(st.booleans()) else binary(operand, x)
        elif kind in ("max_pool", "avg_pool") and min(h, w) >= 2:
            kernel = draw(st.sampled_from([k for k in (2, 3) if k <= min(h, w)]))
            pad = draw(st.integers(0, kernel // 2))
            options = {
                "strides": (draw(st.integers(1, 2)),) * 2,
                "padding": (pad,) * 4,
                "ceil_mode": draw(st.booleans()),
            }
            if kind == "max_pool":
                op = graph.MaxPoolOp(x, (kernel, kernel), **options)
            else:
                op = graph.AvgPoolOp(
                    x, (kernel, kernel), count_include_pad=draw(st.booleans()), **options
                )
        elif kind == "global_avg_pool":
            op = graph.GlobalAvgPoolOp(x)
        elif kind == "spatial_mean":
            op = graph.ReduceMeanOp(x, (2, 3), keepdims=True)
        elif kind == "identity":
            op = graph.IdentityOp(x)
        elif kind == "dropout":
            op = graph.DropoutOp(x, 0.5)
        else:
            op = graph.ReluOp(x)
        block.add_op(op)
        values.append(op.results[0])

    results = [values[-1]]
    if draw(st.booleans()):
        flat = graph.ReshapeOp(results[0], _flat_shape(results[0]))
        block.add_op(flat)
        units = draw(st.integers(1, 4))
        dense = graph.DenseOp(
            flat, constant(rng.standard_normal((units, _flat_shape(results[0])[1]))), None
        )
        block.add_op(dense)
        results = [dense.result]
    if len(values) > 2 and draw(st.booleans()):
        earlier = draw(st.sampled_from(values[1:-1]))
        if earlier not in results:
            results.append(earlier)
    block.add_op(func.ReturnOp(*results))
    function = func.FuncOp(
        "main", ([TensorType(f32, input_shape)], [r.type for r in results]), Region(block)
    )
    return GraphProgram(ModuleOp([function]), [input_shape])


def _batch_and_space(value: SSAValue) -> tuple[int, ...]:
    """[N, H, W] of an [N, C, H, W] value."""
    n, _, *space = _shape_of(value)
    return (n, *space)


def _flat_shape(value: SSAValue) -> tuple[int, int]:
    """[N, C * H * W] of an [N, C, H, W] value."""
    shape = _shape_of(value)
    return shape[0], int(np.prod(shape[1:]))


@st.composite
def dilated_conv_programs(draw: st.DrawFn) -> GraphProgram:
    """One 2-D convolution with a constant weight, often dilated and padded so widely
    that some taps read only padding (DeepLabV3's atrous convolutions in small), and
    sometimes a relu after it."""
    channels = draw(st.sampled_from([1, 2, 4]))
    size = (draw(st.integers(1, 2)), channels, draw(st.integers(1, 8)), draw(st.integers(1, 8)))
    kernel = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    dilation = (draw(st.integers(1, 6)), draw(st.integers(1, 6)))
    stride = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = []
    for d in range(2):
        span = (kernel[d] - 1) * dilation[d] + 1
        # at least enough padding for one output, often far more
        least = max(0, span - size[2 + d])
        padding.append((draw(st.integers(least, least + 8)), draw(st.integers(0, 8))))
    for d in range(2):
        span = (kernel[d] - 1) * dilation[d] + 1
        if size[2 + d] + sum(padding[d]) < span:
            padding[d] = (padding[d][0] + span - size[2 + d] - sum(padding[d]), padding[d][1])
    groups = draw(st.sampled_from([g for g in (1, channels) if channels % g == 0]))
    outputs = channels * draw(st.integers(1, 2))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    block = Block(arg_types=[TensorType(f32, size)])
    weight = graph.ConstantOp.from_array(
        rng.standard_normal((outputs, channels // groups, *kernel)).astype(np.float32)
    )
    block.add_op(weight)
    bias = None
    if draw(st.booleans()):
        bias_op = graph.ConstantOp.from_array(rng.standard_normal(outputs).astype(np.float32))
        block.add_op(bias_op)
        bias = bias_op.result
    conv = graph.ConvOp(
        block.args[0],
        weight.result,
        bias,
        strides=stride,
        padding=(padding[0][0], padding[1][0], padding[0][1], padding[1][1]),
        dilations=dilation,
        groups=groups,
    )
    block.add_op(conv)
    result = conv.result
    if draw(st.booleans()):
        relu = graph.ReluOp(result)
        block.add_op(relu)
        result = relu.result
    block.add_op(func.ReturnOp(result))
    function = func.FuncOp("main", ([TensorType(f32, size)], [result.type]), Region(block))
    return GraphProgram(ModuleOp([function]), [size])


@dataclass
class RunTimeGraphProgram:
    """A graph program whose inputs share a first dimension of run-time size
    ("batch"); `input_shapes` holds -1 there."""

    module: ModuleOp
    input_shapes: list[tuple[int, ...]]

    def __repr__(self) -> str:
        from strato.testing.equivalence import ir_text

        return f"RunTimeGraphProgram(input_shapes={self.input_shapes}):\n{ir_text(self.module)}"

    def random_inputs(self, batch: int, seed: int) -> list[np.ndarray]:
        rng = np.random.default_rng(seed)
        return [
            rng.standard_normal((batch, *shape[1:])).astype(np.float32)
            for shape in self.input_shapes
        ]


RUN_TIME_UNARY: tuple[Callable[[SSAValue], Operation], ...] = (
    graph.ReluOp,
    graph.SigmoidOp,
    graph.TanhOp,
    graph.NegOp,
    graph.AbsOp,
    graph.GeluOp,
    lambda x: graph.LeakyReluOp(x, 0.1),
)
RUN_TIME_BINARY = (graph.AddOp, graph.SubOp, graph.MulOp, graph.MaximumOp)
RUN_TIME_KINDS = (
    "unary", "binary", "softmax", "reduce", "layer_norm", "dense", "matmul", "transpose", "gram",
    "reshape", "unit_reshape", "embedding", "positions", "where", "split", "scores", "attend",
    "concat", "running", "shift",
)  # fmt: skip


@st.composite
def run_time_graph_programs(
    draw: st.DrawFn, max_ops: int = 6, kinds: Sequence[str] = RUN_TIME_KINDS
) -> RunTimeGraphProgram:
    """A program over inputs whose first dimension is of run-time size (one size,
    "batch", named by each argument's `graph.sizes`), drawn from the ops that take
    run-time dimensions: element-wise ops, broadcasts against constants and between
    batch-sized values, softmax, reductions and layer normalization over static axes,
    dense layers and matrix products (batched over the run-time dimension at rank 3)."""
    rank = draw(st.integers(min_value=1, max_value=3))
    rest = tuple(draw(st.lists(DIM, min_size=rank - 1, max_size=rank - 1)))
    dynamic = DYNAMIC_INDEX
    inputs = 2 if draw(st.booleans()) else 1
    block = Block(arg_types=[TensorType(f32, (dynamic, *rest))] * inputs)
    values: list[SSAValue] = list(block.args)
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))

    def constant(shape: Sequence[int]) -> SSAValue:
        op = graph.ConstantOp.from_array(rng.standard_normal(tuple(shape)).astype(np.float32))
        block.add_op(op)
        return op.result

    for _ in range(draw(st.integers(min_value=1, max_value=max_ops))):
        x = values[-1] if draw(st.booleans()) else draw(st.sampled_from(values))
        shape = _shape_of(x)
        static = shape[1:]
        kind = draw(st.sampled_from(list(kinds)))
        op: Operation
        if kind == "binary":
            partners = [v for v in values if _shape_of(v) == shape]
            if draw(st.booleans()):
                # a constant that broadcasts along the run-time dimensions
                tail = [draw(st.sampled_from([1, d])) if d > 0 else 1 for d in static]
                y = constant(tail[draw(st.integers(0, len(tail))) :] if tail else [1])
            else:
                y = draw(st.sampled_from(partners))
            pair = (x, y) if draw(st.booleans()) else (y, x)
            op = draw(st.sampled_from(RUN_TIME_BINARY))(*pair)
        elif kind == "softmax" and shape:
            # over a static axis, or a run-time one (an extent known at run time)
            axis = draw(st.integers(0, len(shape) - 1))
            op = graph.SoftmaxOp(x, [axis])
        elif kind == "reduce" and shape:
            axes = sorted(draw(st.sets(st.integers(0, len(shape) - 1), min_size=1)))
            kinds = [graph.ReduceSumOp, graph.ReduceMeanOp]
            if not any(shape[a] < 0 for a in axes):
                kinds.append(graph.ReduceMaxOp)  # numpy has no maximum of an empty range
            reduction: type[graph.ReductionOp] = draw(st.sampled_from(kinds))
            op = reduction(x, axes, keepdims=draw(st.booleans()))
        elif kind == "transpose" and len(shape) >= 2:
            op = graph.TransposeOp(x, draw(st.permutations(range(len(shape)))))
        elif kind == "reshape" and shape and shape[-1] > 0:
            # the static dimensions after the last run-time one, split or merged
            run_time = [n for n, d in enumerate(shape) if d < 0]
            kept, rest = shape[: run_time[-1] + 1 if run_time else 0], shape[run_time[-1] + 1 if run_time else 0 :]
            if len(rest) >= 2 and draw(st.booleans()):
                target = (*kept, *rest[:-2], rest[-2] * rest[-1])
            elif rest[-1] % 2 == 0:
                target = (*kept, *rest[:-1], 2, rest[-1] // 2)
            else:
                target = (*kept, *rest, 1)
            op = graph.ReshapeOp(x, target)
        elif kind == "unit_reshape" and len(shape) <= 3:
            # a dimension of size 1 added anywhere, or one dropped
            units = [n for n, d in enumerate(shape) if d == 1]
            if units and draw(st.booleans()):
                drop = draw(st.sampled_from(units))
                target = (*shape[:drop], *shape[drop + 1 :])
            else:
                at = draw(st.integers(0, len(shape)))
                target = (*shape[:at], 1, *shape[at:])
            op = graph.ReshapeOp(x, target)
        elif kind == "embedding" and len(shape) <= 2:
            # rows of a table: row 1 where the value is above a constant, row 0 else
            # (the condition cast to integers)
            above = graph.GreaterOp(x, constant([1]))
            cast = graph.CastOp(above.result, i64)
            block.add_op(above)
            block.add_op(cast)
            op = graph.GatherOp(constant((draw(st.integers(2, 5)), draw(DIM))), cast.result, 0)
        elif kind == "positions" and shape and shape[0] < 0:
            # x + the positions along its run-time dimension, broadcast over the rest
            positions = graph.IotaOp(x, 0)
            as_float = graph.CastOp(positions.result, f32)
            column = graph.ReshapeOp(as_float.result, (shape[0], *[1] * (len(shape) - 1)))
            for step in (positions, as_float, column):
                block.add_op(step)
            op = graph.AddOp(x, column.result)
        elif kind == "split" and shape and shape[-1] >= 2:
            # the last (static) axis cut in two; one of the pieces goes on
            first = draw(st.integers(1, shape[-1] - 1))
            split = graph.SplitOp(x, len(shape) - 1, [first, shape[-1] - first])
            block.add_op(split)
            values.append(split.results[0])
            op = graph.NegOp(split.results[1])
        elif kind == "concat" and shape and shape[-1] > 0:
            # the value joined with its negation along the last (static) axis
            negated = graph.NegOp(x)
            block.add_op(negated)
            op = graph.ConcatOp([x, negated.result], len(shape) - 1)
        elif kind == "running" and shape:
            # a running sum, forward or back, along the run-time dimension or a static one
            axis = draw(st.integers(0, len(shape) - 1))
            op = graph.CumSumOp(x, axis, draw(st.booleans()), draw(st.booleans()))
        elif kind == "shift" and shape:
            # a run-time dimension shifted (x[1:] padded back at the end is a shift by
            # -1), the static ones padded, with zeros or another constant
            low = [draw(st.integers(-3, 3)) if d < 0 else draw(st.integers(0, 2)) for d in shape]
            high = [-lo if d < 0 else draw(st.integers(0, 2)) for lo, d in zip(low, shape)]
            value = draw(st.sampled_from([None, -1.5]))
            op = graph.PadOp(x, low, high, graph.PadMode.CONSTANT, value)
        elif kind == "where" and shape:
            # x where it is above a constant that broadcasts, else another
            positive = graph.GreaterOp(x, constant([1]))
            block.add_op(positive)
            last = [shape[-1]] if shape[-1] >= 0 else [1]
            op = graph.WhereOp(positive.result, x, constant(last))
        elif kind == "gram" and len(shape) == 2 and shape[0] < 0:
            # x^T x: a product over the run-time dimension, of a static result
            transposed = graph.TransposeOp(x, [1, 0])
            block.add_op(transposed)
            op = graph.MatmulOp(transposed.result, x)
        elif kind == "scores" and len(shape) == 2 and shape[0] < 0 and shape[1] > 0:
            # x x^T / w: a product of run-time rows and columns (register tiles with
            # guards), scaled by an element-wise epilogue
            transposed = graph.TransposeOp(x, [1, 0])
            product = graph.MatmulOp(x, transposed.result)
            scale = graph.ConstantOp.from_array(np.full((1,), 1.0 / shape[1], np.float32))
            block.add_ops([transposed, product, scale])
            op = graph.MulOp(product.results[0], scale.result)
        elif kind == "attend" and len(shape) == 2 and shape[0] < 0 and shape[1] > 0:
            # softmax(x x^T) v, v = x w of fewer or more than a vector's columns:
            # attention's product of its weights and its values, contracting the
            # run-time dimension
            values_op = graph.MatmulOp(x, constant((shape[1], draw(st.integers(4, 40)))))
            transposed = graph.TransposeOp(x, [1, 0])
            scores = graph.MatmulOp(x, transposed.result)
            weights = graph.SoftmaxOp(scores.results[0], [1])
            block.add_ops([values_op, transposed, scores, weights])
            op = graph.MatmulOp(weights.results[0], values_op.results[0])
        elif kind == "layer_norm" and len(shape) > 1 and shape[-1] > 0:
            axis = draw(st.integers(1, len(shape) - 1))
            normalized = shape[axis:]
            # a scale over the normalized dimensions after the last run-time one
            run_time = [n for n, d in enumerate(normalized) if d < 0]
            tail = normalized[run_time[-1] + 1 :] if run_time else normalized
            scale = constant(tail) if draw(st.booleans()) else None
            bias = constant(normalized[-1:]) if draw(st.booleans()) else None
            op = graph.LayerNormOp(x, axis, 1e-5, scale, bias)
        elif kind == "dense" and shape and shape[-1] > 0:
            units = draw(DIM)
            bias = constant((units,)) if draw(st.booleans()) else None
            op = graph.DenseOp(x, constant((units, shape[-1])), bias)
        elif kind == "matmul" and len(shape) >= 2 and shape[-1] > 0:
            op = graph.MatmulOp(x, constant((shape[-1], draw(DIM))))
        else:
            op = draw(st.sampled_from(RUN_TIME_UNARY))(x)
        block.add_op(op)
        values.append(op.results[0])

    result = values[-1]
    block.add_op(func.ReturnOp(result))
    arg_types = [arg.type for arg in block.args]
    names = DictionaryAttr({"graph.sizes": ArrayAttr([StringAttr("batch")])})
    function = func.FuncOp(
        "main", (arg_types, [result.type]), Region(block), arg_attrs=ArrayAttr([names] * inputs)
    )
    shapes = [(-1, *_shape_of(arg)[1:]) for arg in block.args]
    return RunTimeGraphProgram(ModuleOp([function]), shapes)
