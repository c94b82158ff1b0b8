"""schedule-default: each stage gets its operator's template with default knobs, the
kernel records them, and the scheduled model computes what the unscheduled one does
(for the defaults and for random knob values of every template)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func, memref
from xdsl.dialects.builtin import ModuleOp, StringAttr

from strato.context import make_context
from strato.dialects.loop import ForOp, LoopKind
from strato.frontends.onnx import import_onnx
from strato.pipeline import run_pipeline
from strato.runtime.signature import Signature
from strato.schedule import Schedule, ScheduleError
from strato.schedule.intrinsics import TENSORIZED_ATTR
from strato.schedule.templates import ScheduleContext, Template
from strato.targets.llvm.build import build_llvm, build_loops
from strato.targets.registry import get_target, run_stages
from strato.transforms import resolve_pass
from strato.transforms.schedule_default import (
    KNOBS_ATTR,
    TEMPLATE_ATTR,
    UNSCHEDULED_ATTR,
    ScheduleDefaultPass,
    schedule_default,
)

RNG = np.random.default_rng(0)


def model(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def value(name: str, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def weights(name: str, shape) -> onnx.TensorProto:
    return numpy_helper.from_array(RNG.standard_normal(shape).astype(np.float32), name)


def matmul() -> onnx.ModelProto:
    return model(
        [helper.make_node("MatMul", ["A", "B"], ["Y"])],
        [value("A", [16, 24]), value("B", [24, 64])],
        [value("Y", [16, 64])],
    )


def dense_relu() -> onnx.ModelProto:
    return model(
        [helper.make_node("Gemm", ["X", "W", "b"], ["G"], transB=1),
         helper.make_node("Relu", ["G"], ["Y"])],
        [value("X", [4, 32])],
        [value("Y", [4, 48])],
        [weights("W", [48, 32]), weights("b", [48])],
    )  # fmt: skip


def dense_prime_rows() -> onnx.ModelProto:
    """29 rows, a prime: no divisor makes a register tile; the epilogue (bias, ReLU)
    makes the product a local buffer the padded row tail can extend."""
    return model(
        [helper.make_node("MatMul", ["X", "W"], ["M"]),
         helper.make_node("Add", ["M", "b"], ["A"]),
         helper.make_node("Relu", ["A"], ["Y"])],
        [value("X", [1, 29, 32])],
        [value("Y", [1, 29, 48])],
        [weights("W", [32, 48]), weights("b", [48])],
    )  # fmt: skip


def attention_scores() -> onnx.ModelProto:
    """Q K^T of 2 heads over 23 tokens (a prime): neither rows nor columns tile, and
    the product is the kernel's output."""
    return model(
        [helper.make_node("MatMul", ["Q", "K"], ["Y"])],
        [value("Q", [1, 2, 23, 8]), value("K", [1, 2, 8, 23])],
        [value("Y", [1, 2, 23, 23])],
    )


def conv(channels: int, group: int = 1, stride: int = 1) -> onnx.ModelProto:
    node = helper.make_node(
        "Conv", ["X", "W"], ["Y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
        strides=[stride, stride], group=group,
    )  # fmt: skip
    out = (10 + 2 - 3) // stride + 1
    return model(
        [node],
        [value("X", [1, channels, 10, 10])],
        [value("Y", [1, channels, out, out])],
        [weights("W", [channels, channels // group, 3, 3])],
    )


def pool_softmax() -> onnx.ModelProto:
    return model(
        [helper.make_node("MaxPool", ["X"], ["P"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Softmax", ["P"], ["Y"], axis=-1)],
        [value("X", [1, 3, 8, 8])],
        [value("Y", [1, 3, 4, 4])],
    )  # fmt: skip


def conv_pool(pool: str) -> onnx.ModelProto:
    """A 16-channel convolution (blocked by graph-alter-layout), then a padded 3x3
    stride-2 window pool, which follows it into the blocked layout."""
    attributes = {"count_include_pad": 0} if pool == "AveragePool" else {}
    return model(
        [helper.make_node("Conv", ["X", "W"], ["C"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         helper.make_node(pool, ["C"], ["Y"], kernel_shape=[3, 3], strides=[2, 2],
                          pads=[1, 1, 1, 1], **attributes)],
        [value("X", [1, 16, 10, 10])],
        [value("Y", [1, 16, 5, 5])],
        [weights("W", [16, 16, 3, 3])],
    )  # fmt: skip


def softmax(axis: int) -> onnx.ModelProto:
    return model(
        [helper.make_node("Softmax", ["X"], ["Y"], axis=axis)],
        [value("X", [2, 16, 32])],
        [value("Y", [2, 16, 32])],
    )


def layer_norm() -> onnx.ModelProto:
    return model(
        [helper.make_node("LayerNormalization", ["X", "g", "b"], ["Y"], axis=-1)],
        [value("X", [2, 16, 32])],
        [value("Y", [2, 16, 32])],
        [weights("g", [32]), weights("b", [32])],
    )


MODELS = {
    "matmul": matmul,
    "dense_relu": dense_relu,
    "dense_prime_rows": dense_prime_rows,
    "attention_scores": attention_scores,
    "conv_nchw": lambda: conv(3),
    "conv_nchwc": lambda: conv(16),
    "conv_strided": lambda: conv(16, stride=2),
    "depthwise": lambda: conv(4, group=4),
    "depthwise_nchwc": lambda: conv(32, group=32),
    "depthwise_nchwc_strided": lambda: conv(32, group=32, stride=2),
    "pool_softmax": pool_softmax,
    "blocked_max_pool": lambda: conv_pool("MaxPool"),
    "blocked_avg_pool": lambda: conv_pool("AveragePool"),
    "softmax_rows": lambda: softmax(-1),
    "softmax_columns": lambda: softmax(1),
    "layer_norm": layer_norm,
}


def inputs_of(proto: onnx.ModelProto) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return [
        rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim]).astype(np.float32)
        for i in proto.graph.input
    ]


def compiled(proto: onnx.ModelProto, *, scheduled: bool):
    """The model compiled by the llvm target's stages, with or without its schedule."""
    imported = import_onnx(proto)
    signature = Signature.from_function(
        imported.function, imported.input_names, imported.output_names
    )
    stages = [s for s in get_target("llvm").stages() if scheduled or s.name != "schedule"]
    run_stages(stages, imported.module)
    return build_loops(imported.module, imported.function_name, signature)


@pytest.fixture(autouse=True)
def avx512_vectors(monkeypatch):
    """The tests' expected tiles are those of the machine they were written for: 16
    fp32 lanes in 32 vector registers (AVX-512). The host's CPU may have others (AVX2:
    8 in 16); the target plans for these numbers whatever the host, and the code it
    builds still runs on the host (LLVM splits the wider vectors)."""
    from strato.targets.llvm import host

    monkeypatch.setattr(host, "vector_lanes", lambda machine, itemsize=4: 64 // itemsize)
    monkeypatch.setattr(host, "vector_registers", lambda machine: 32)


def loop_module(proto: onnx.ModelProto) -> ModuleOp:
    """The model lowered to unscheduled loop-level kernels, as the llvm target does."""
    imported = import_onnx(proto)
    run_stages(get_target("llvm").lowering_stages(), imported.module)
    return imported.module


def cpu(threads: int | None = None) -> ScheduleContext:
    """The llvm target's schedule context (the available cores' threads by default)."""
    return get_target("llvm" if threads is None else f"llvm -threads={threads}").schedule_context()


def kernels(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp) and "loop.kernel" in op.attributes]


def loop_structure(kernel: func.FuncOp) -> list[tuple[str, int, str]]:
    return [
        (op.axis.data if op.axis is not None else "", op.trip_count, op.loop_kind.value)
        for op in kernel.walk()
        if isinstance(op, ForOp)
    ]


def test_registered_and_in_the_compile_pipeline():
    assert resolve_pass("schedule-default") is ScheduleDefaultPass
    target = get_target("llvm -threads=2")
    passes = [p for stage in target.stages() for p in stage.passes]
    names = [p.name for p in passes]
    assert names.index("convert-te-to-loops") < names.index("schedule-default")
    assert names[-1] == "schedule-default"  # then the build lowers each kernel
    (schedule,) = [p for p in passes if p.name == "schedule-default"]
    assert (schedule.target, schedule.lanes, schedule.threads) == ("llvm", target.lanes, 2)
    assert "schedule-default" not in [p.name for s in target.lowering_stages() for p in s.passes]


@pytest.mark.parametrize("name", list(MODELS))
def test_default_schedules_compute_the_unscheduled_results(name: str):
    proto = MODELS[name]()
    inputs = inputs_of(proto)
    plain = compiled(proto, scheduled=False)(*inputs)
    scheduled = compiled(proto, scheduled=True)(*inputs)
    for got, want in zip(scheduled, plain, strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


EXPECTED_TEMPLATES = {
    "matmul": {"matmul": "dense"},
    # the constant weights are packed at compile time (graph-pack-dense): a matmul
    "dense_relu": {"matmul": "dense", "relu": "injective"},
    "conv_nchw": {"pad": "injective", "conv": "conv2d_nchw"},
    "depthwise": {"pad": "injective", "conv": "depthwise_conv2d_nchw"},
    # blocked: the input moves with the lanes (depthwise), or is broadcast across them
    "depthwise_nchwc": {"blocked_conv": "depthwise_conv2d_nchwc"},
    "conv_nchwc": {"blocked_conv": "conv2d_nchwc"},
    "pool_softmax": {"max_pool": "pooling"},
    "blocked_max_pool": {"blocked_max_pool": "pooling"},
}


@pytest.mark.parametrize("name", list(EXPECTED_TEMPLATES))
def test_each_kernel_records_its_templates_and_knobs(name: str):
    module = loop_module(MODELS[name]())
    schedule_default(module, cpu())
    recorded: dict[str, str] = {}
    for kernel in kernels(module):
        templates = kernel.attributes[TEMPLATE_ATTR]
        knobs = kernel.attributes[KNOBS_ATTR]
        for stage, template in templates.data.items():
            recorded[stage] = template.data
            assert stage in knobs.data
    for stage, template in EXPECTED_TEMPLATES[name].items():
        assert recorded.get(stage) == template, recorded


@pytest.mark.parametrize("name", ["softmax_rows", "layer_norm"])
def test_a_row_wise_kernel_computes_each_row_in_one_loop_nest(name: str):
    """Reductions along the rows and the elementwise stages after them are computed
    inside the last stage's loop over rows: one root loop nest, per-row buffers."""
    module = loop_module(MODELS[name]())
    schedule_default(module, cpu(threads=1))
    (kernel,) = kernels(module)
    roots = [op for op in kernel.body.block.ops if isinstance(op, ForOp)]
    assert len(roots) == 1, loop_structure(kernel)
    for op in kernel.walk():
        if isinstance(op, memref.AllocOp):
            assert op.memref.type.get_shape()[:-1] == (1, 1), op.memref.type


@pytest.mark.parametrize("name", ["blocked_max_pool", "blocked_avg_pool"])
def test_a_blocked_window_pool_reads_its_input_unpadded_into_a_register_tile(name: str):
    """The padding is inlined into the window's loads (no padded copy of the input is
    allocated) and the window accumulates into a tile of output columns x one channel
    block, unrolled over the columns and vectorized over the block."""
    module = loop_module(MODELS[name]())
    schedule_default(module, cpu(threads=1))
    (pool,) = [k for k in kernels(module) if "pool" in k.sym_name.data]
    shapes = [op.memref.type.get_shape() for op in pool.walk() if isinstance(op, memref.AllocOp)]
    # the pool's input is 10x10 (padded 12x12) x 16 channels: nothing that large is
    # allocated; its tile is one output row's 5 columns x the 16 lanes
    assert all(np.prod(shape) < 10 * 10 * 16 for shape in shapes), shapes
    assert (1, 1, 1, 5, 16) in shapes, shapes
    kinds = {op.loop_kind for op in pool.walk() if isinstance(op, ForOp)}
    assert {LoopKind.UNROLLED, LoopKind.VECTORIZED} <= kinds


def test_a_reduction_each_row_needs_whole_is_not_recomputed_per_row():
    """softmax over axis 1 of [2, 16, 32]: every row of the output needs the whole
    column reductions, so the stages (max, exp, sum, the sum's inverse, the product)
    keep their own loop nests."""
    module = loop_module(softmax(1))
    schedule_default(module, cpu(threads=1))
    (kernel,) = kernels(module)
    roots = [op for op in kernel.body.block.ops if isinstance(op, ForOp)]
    assert len({op.attributes["stage"].data for op in roots}) == 5


def test_the_dense_template_tensorizes_with_the_micro_kernel_and_vector_loops():
    module = loop_module(matmul())
    schedule_default(module, cpu())
    (kernel,) = kernels(module)
    tensorized = {op.attributes[TENSORIZED_ATTR].data for op in kernel.walk() if TENSORIZED_ATTR in op.attributes}
    assert tensorized == {"cpu.fma_tile.8x32x24"}
    kinds = {op.loop_kind for op in kernel.walk() if isinstance(op, ForOp)}
    assert {LoopKind.UNROLLED, LoopKind.VECTORIZED} <= kinds


def test_a_block_of_one_row_over_packed_weights_streams_the_panels_as_a_tile():
    """A dense layer compiled once for every batch size packs its weights for its
    blocks of 32 rows; its block of one row reads them as they are, a 1 x 32 tile over
    each panel (before: a reduction loop per half panel), and computes numpy's rows."""
    import strato
    from strato.testing.dynamic_models import mlp

    proto = mlp(width=256, hidden=1024, classes=10)
    tiles: dict[str, set[str]] = {}

    def after(stage, module):
        if stage == "schedule-default":
            for op in module.walk():
                if isinstance(op, func.FuncOp) and "_rows1_" in op.sym_name.data:
                    tiles[op.sym_name.data] = {
                        inner.attributes[TENSORIZED_ATTR].data
                        for inner in op.walk()
                        if TENSORIZED_ATTR in inner.attributes
                    }

    model = strato.compile(proto, threads=1, cache=False, after_stage=after)
    (first,) = [name for name in tiles if name.startswith("matmul_transpose_reshape_add_relu")]
    assert tiles[first] == {"cpu.fma_tile.1x32x256"}
    import onnxruntime as ort

    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    for batch in (1, 3):
        x = np.random.default_rng(batch).standard_normal((batch, 256)).astype(np.float32)
        np.testing.assert_allclose(model(x)[0], session.run(None, {"x": x})[0], rtol=1e-5, atol=1e-6)


def test_rows_no_tile_divides_are_tensorized_with_a_padded_tail():
    """29 rows, 48 columns: tiles of 6 x 48 (3 vectors: at most 9 rows of
    accumulators) over 30 rows (the fewest padded ones, the taller tile on a tie), A
    copied into a 30-row local buffer; the output keeps its 29 rows."""
    module = loop_module(dense_prime_rows())
    schedule_default(module, cpu())
    (kernel,) = [k for k in kernels(module) if "matmul" in k.sym_name.data]
    tensorized = {op.attributes[TENSORIZED_ATTR].data for op in kernel.walk() if TENSORIZED_ATTR in op.attributes}
    assert tensorized == {"cpu.fma_tile.6x48x32"}, tensorized
    shapes = [op.memref.type.get_shape() for op in kernel.walk() if isinstance(op, memref.AllocOp)]
    assert (30, 32) in shapes, shapes


def test_a_product_with_prime_rows_and_columns_is_tensorized_into_a_padded_local_buffer():
    """23 x 23 per head: the product computed into a local buffer padded to 24 x 32
    (tiles of 12 x 32: as few padded rows and columns as any, the larger tile), copied
    into the output. The buffer and the padded operands hold one head (the one the
    batch loop is at), not both."""
    module = loop_module(attention_scores())
    schedule_default(module, cpu())
    (kernel,) = kernels(module)
    assert UNSCHEDULED_ATTR not in kernel.attributes, kernel.attributes[UNSCHEDULED_ATTR]
    tensorized = {op.attributes[TENSORIZED_ATTR].data for op in kernel.walk() if TENSORIZED_ATTR in op.attributes}
    assert tensorized == {"cpu.fma_tile.12x32x8"}, tensorized
    shapes = [op.memref.type.get_shape() for op in kernel.walk() if isinstance(op, memref.AllocOp)]
    assert (1, 1, 24, 32) in shapes and (1, 1, 24, 8) in shapes and (1, 1, 8, 32) in shapes, shapes
    assert not any(shape[:2] == (1, 2) for shape in shapes), shapes


def test_buffers_whose_values_share_a_name_are_told_apart():
    """torch's dynamo exporter names values val_0, val_1, ...; they read back with one
    hint, `val`. The buffers get distinct names, so the dense template finds which
    operand is A and which is B and tensorizes, as it does for the same product under
    other names."""
    proto = attention_scores()
    renames = {"Q": "val_0", "K": "val_1", "Y": "val_2"}
    for node in proto.graph.node:
        node.input[:] = [renames[name] for name in node.input]
        node.output[:] = [renames[name] for name in node.output]
    for info in (*proto.graph.input, *proto.graph.output):
        info.name = renames[info.name]
    module = loop_module(proto)
    (kernel,) = kernels(module)
    assert {arg.name_hint for arg in kernel.body.block.args} == {"val"}
    names = [buffer.name for buffer in Schedule(module, kernel=kernel.sym_name.data).state.buffers]
    assert len(set(names)) == len(names), names
    schedule_default(module, cpu())
    (kernel,) = kernels(module)
    tensorized = {op.attributes[TENSORIZED_ATTR].data for op in kernel.walk() if TENSORIZED_ATTR in op.attributes}
    assert tensorized == {"cpu.fma_tile.12x32x8"}, tensorized


def test_a_template_that_fails_is_undone_and_the_reason_recorded():
    def split_then_fail(sch, stage, knobs, context):
        sch.split(sch.get_loops(stage)[0], [None, 2])
        raise ScheduleError("cannot do this on purpose")

    failing = Template("failing", (), lambda sch, stage: True, split_then_fail)
    context = ScheduleContext("test", (failing,), lanes=16, vector_registers=32, threads=1)
    module = loop_module(matmul())
    before = loop_structure(kernels(module)[0])
    schedule_default(module, context)
    (kernel,) = kernels(module)
    assert loop_structure(kernel) == before
    reasons = kernel.attributes[UNSCHEDULED_ATTR]
    assert reasons.data["matmul"].data == "failing: cannot do this on purpose"


def test_every_knob_default_is_in_its_domain_and_templates_have_distinct_names():
    for lanes in (4, 8, 16):
        context = get_target("llvm").schedule_context()
        context = ScheduleContext(context.target, context.templates, lanes, 32 if lanes == 16 else 16)
        templates = context.templates
        assert len({t.name for t in templates}) == len(templates)
        for template in templates:
            for knob in template.knobs:
                assert knob.default(context) in knob.domain


@settings(max_examples=12, deadline=None)
@given(data=st.data(), name=st.sampled_from(["matmul", "dense_relu", "conv_nchw", "conv_nchwc", "depthwise", "pool_softmax",
                                           "blocked_max_pool", "blocked_avg_pool"]))
def test_random_knob_values_compute_the_unscheduled_results(data, name: str):
    proto = MODELS[name]()
    inputs = inputs_of(proto)
    plain = compiled(proto, scheduled=False)(*inputs)
    module = loop_module(proto)
    context = cpu()
    signature_module = import_onnx(proto)
    chosen: dict[str, dict] = {}
    for kernel in kernels(module):
        sch = Schedule(module, kernel=kernel.sym_name.data)
        for stage in sch.get_stages():
            template = context.template_for(sch, stage)
            if template is None:
                continue
            knobs = {k.name: data.draw(st.sampled_from(k.domain), label=f"{stage.name}.{k.name}") for k in template.knobs}
            chosen[stage.name] = knobs
            try:
                template.apply(sch, stage, knobs, context)
            except ScheduleError:
                pass  # a refused primitive leaves the kernel as the previous step left it
    run_pipeline(make_context(), module, "convert-loops-to-llvm")
    signature = Signature.from_function(
        signature_module.function, signature_module.input_names, signature_module.output_names
    )
    got = build_llvm(module, signature_module.function_name, signature)(*inputs)
    for a, b in zip(got, plain, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5, err_msg=str(chosen))


def window_conv(channels: int, size: int, window: tuple[int, int]) -> onnx.ModelProto:
    node = helper.make_node("Conv", ["X", "W"], ["Y"], kernel_shape=list(window))
    out = [size - window[0] + 1, size - window[1] + 1]
    return model(
        [node],
        [value("X", [1, channels, size, size])],
        [value("Y", [1, channels, *out])],
        [weights("W", [channels, channels, *window])],
    )


@pytest.mark.parametrize(
    ("proto", "innermost"),
    [
        # a chain's first 3x3 convolution with an input larger than its weights reads
        # it as it is (NCHW1c): the 48 channels, one at a time, are summed innermost
        (window_conv(48, 32, (3, 3)), 48),
        # a blocked input (NCHW16c; its weights outweigh it), and a window with a unit
        # dimension: the 16 channels of a block innermost, not the 3 blocks
        (window_conv(48, 4, (2, 1)), 16),
    ],
)
def test_the_blocked_convolution_sums_the_channels_innermost(proto, innermost: int):
    """The reduction loop right outside the register tile walks the input channels:
    those of a block, or all of them when the blocks are of one channel."""
    module = loop_module(proto)
    run_pipeline(make_context(), module, "schedule-default")
    (kernel,) = [k for k in kernels(module) if "blocked_conv" in k.sym_name.data]
    reductions = [op for op in kernel.walk() if isinstance(op, ForOp) and "reduction" in op.attributes]
    inner = [op for op in reductions if not any(isinstance(o, ForOp) and "reduction" in o.attributes for o in op.body.walk())]
    assert {op.trip_count for op in inner} == {innermost}
    np.testing.assert_allclose(
        compiled(proto, scheduled=True)(*inputs_of(proto)),
        compiled(proto, scheduled=False)(*inputs_of(proto)),
        rtol=1e-4, atol=1e-4,
    )


@pytest.mark.parametrize("channels", [32, 40])
def test_a_chain_exit_copies_each_tile_out_of_the_blocked_layout(channels: int):
    """The convolution's one reader copies its result back to NCHW: it is computed
    after each register tile (its loops inside the convolution's nest, none of its
    own), and the blocked result is a buffer of one tile. 40 channels: the last block's
    padding lanes are not copied."""
    proto = window_conv(channels, 30, (3, 3))
    module = loop_module(proto)
    run_pipeline(make_context(), module, "schedule-default")
    (kernel,) = [k for k in kernels(module) if "blocked_conv" in k.sym_name.data]
    roots = [op for op in kernel.body.block.ops if isinstance(op, ForOp)]
    assert "layout_transform" not in " ".join(op.attributes["stage"].data for op in roots)
    copies = [op for op in kernel.walk() if isinstance(op, ForOp) and "layout_transform" in op.attributes["stage"].data]
    assert copies and copies[-1].loop_kind == LoopKind.VECTORIZED
    blocked = [
        op.memref.type.get_shape() for op in kernel.walk()
        if isinstance(op, memref.AllocOp) and len(op.memref.type.get_shape()) == 5
    ]
    assert all(shape[2] == 1 for shape in blocked), blocked  # one output row
    np.testing.assert_allclose(
        compiled(proto, scheduled=True)(*inputs_of(proto)),
        compiled(proto, scheduled=False)(*inputs_of(proto)),
        rtol=1e-4, atol=1e-4,
    )


def test_a_product_is_copied_out_per_panel_of_columns():
    """A dense layer whose weights are packed into panels of 32 columns (the product
    [panels, rows, 32]) and whose bias and ReLU the output's view leaves in a stage of
    their own: that stage runs after each panel, inside the product's nest, and the
    product is a buffer of one panel (29 rows padded to 30), not of the three."""
    proto = model(
        [helper.make_node("MatMul", ["X", "W"], ["M"]),
         helper.make_node("Add", ["M", "b"], ["A"]),
         helper.make_node("Relu", ["A"], ["Y"])],
        [value("X", [1, 29, 64])],
        [value("Y", [1, 29, 96])],
        [weights("W", [64, 96]), weights("b", [96])],
    )  # fmt: skip
    module = loop_module(proto)
    run_pipeline(make_context(), module, "schedule-default")
    (kernel,) = [k for k in kernels(module) if "matmul" in k.sym_name.data]
    roots = {op.attributes["stage"].data for op in kernel.body.block.ops if isinstance(op, ForOp)}
    assert roots == {"matmul", "matmul.t0.local"}, roots
    shapes = [op.memref.type.get_shape() for op in kernel.walk() if isinstance(op, memref.AllocOp)]
    assert (1, 30, 32) in shapes and not any(len(s) == 3 and s[0] > 1 for s in shapes), shapes
    np.testing.assert_allclose(
        compiled(proto, scheduled=True)(*inputs_of(proto)),
        compiled(proto, scheduled=False)(*inputs_of(proto)),
        rtol=1e-4, atol=1e-4,
    )



@pytest.mark.parametrize("threads", [1, 2])
def test_a_kernel_of_run_time_sizes_runs_its_nests_on_the_pool(threads: int):
    """Not scheduled (it takes a run-time size); on two threads the outermost loop of
    each stage's nest runs to its bound as a parallel loop, which the pool takes only
    with enough rows (the caller alone below PARALLEL_MIN_ITERATIONS); the values are
    the same at every size."""
    from test_convert_te_to_loops import RUN_TIME_TE
    from xdsl.parser import Parser

    from strato.targets.llvm.kernels import compile_loops

    module = Parser(make_context(), RUN_TIME_TE).parse_module()
    run_pipeline(make_context(), module, f"convert-te-to-loops,schedule-default{{threads={threads} lanes=16}}")
    kernel = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "rows_softmax")
    assert "takes a run-time size" in str(kernel.attributes["schedule.unscheduled"])
    outer = [op for op in kernel.body.block.ops if isinstance(op, ForOp)]
    kinds = {op.loop_kind for op in outer}
    if threads == 1:
        assert kinds == {LoopKind.SERIAL} and "schedule.parallel" not in kernel.attributes
    else:
        assert kinds == {LoopKind.PARALLEL}
        assert set(kernel.attributes["schedule.parallel"].data) == {"mx", "e", "s", "y"}
    function = compile_loops(module, threads=threads).function("rows_softmax")
    for n in (1, 7, 5000):
        x = np.random.default_rng(n).standard_normal((n, 8)).astype(np.float32)
        y = np.full_like(x, np.nan)
        function(x, y, n)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


RUN_TIME_PRODUCT = """
te.primitive @product {
  %n = te.size "n" : index
  %w = te.placeholder "w" sizes(%n) : tensor<4x?xf32>
  %v = te.placeholder "v" sizes(%n) : tensor<?x32xf32>
  %r = te.reduce "r" sum (%i, %j) over (%k : %n) init 0.0 : tensor<4x32xf32> {
    %a = te.read %w[%i, %k] : tensor<4x?xf32>
    %b = te.read %v[%k, %j] : tensor<?x32xf32>
    %p = arith.mulf %a, %b : f32
    te.yield %p : f32
  }
  te.output %r : tensor<4x32xf32>
}
"""


def test_a_product_over_a_run_time_dimension_runs_as_register_tiles():
    """w[i, k] * v[k, j] summed over a run-time k: the update nest runs as register
    tiles of 4 rows (all there are) by 32 columns (two vectors of 16): the tile starts
    at the init value (the init nest is absorbed), k runs around the unrolled rows and
    vectorized columns, and the tile is stored once. The sums are numpy's, term by term
    in the same order, at every size."""
    from xdsl.parser import Parser

    from strato.targets.llvm.kernels import compile_loops

    module = Parser(make_context(), RUN_TIME_PRODUCT).parse_module()
    run_pipeline(make_context(), module, "convert-te-to-loops,schedule-default{threads=1 lanes=16 registers=32}")
    kernel = next(op for op in module.ops if isinstance(op, func.FuncOp))
    assert dict(kernel.attributes["schedule.run_time_tiles"].data) == {"r": StringAttr("4x32")}
    (update,) = [op for op in kernel.body.block.ops if isinstance(op, ForOp)]
    nest = [op for op in update.walk() if isinstance(op, ForOp)]
    assert [(op.axis.data, op.loop_kind) for op in nest] == [
        ("i.blocks", LoopKind.SERIAL), ("j.tiles32", LoopKind.SERIAL),
        ("i.load", LoopKind.UNROLLED), ("j.load", LoopKind.VECTORIZED),
        ("k", LoopKind.SERIAL), ("i.update", LoopKind.UNROLLED), ("j.update", LoopKind.VECTORIZED),
        ("i.store", LoopKind.UNROLLED), ("j.store", LoopKind.VECTORIZED),
    ]  # fmt: skip
    assert nest[4].is_dynamic and "reduction" in nest[4].attributes
    function = compile_loops(module, threads=1).function("product")
    for n in (0, 1, 5, 300):
        rng = np.random.default_rng(n)
        w, v = rng.standard_normal((4, n)).astype(np.float32), rng.standard_normal((n, 32)).astype(np.float32)
        r = np.full((4, 32), np.nan, np.float32)
        function(w.ravel(), v, r, n)
        expected = np.zeros((4, 32), np.float32)
        for k in range(n):  # the kernel's order of the terms
            expected += np.outer(w[:, k], v[k])
        np.testing.assert_allclose(r, expected, rtol=1e-5, atol=1e-5)


RUN_TIME_SCORES = """
te.primitive @scores {
  %n = te.size "n" : index
  %q = te.placeholder "q" sizes(%n) : tensor<?x8xf32>
  %kt = te.placeholder "kt" sizes(%n) : tensor<8x?xf32>
  %s = te.reduce "s" sum (%i, %j) over (%k : 8) init 0.0 sizes(%n, %n) : tensor<?x?xf32> {
    %a = te.read %q[%i, %k] : tensor<?x8xf32>
    %b = te.read %kt[%k, %j] : tensor<8x?xf32>
    %p = arith.mulf %a, %b : f32
    te.yield %p : f32
  }
  %e = te.compute "e" (%i, %j) sizes(%n, %n) : tensor<?x?xf32> {
    %x = te.read %s[%i, %j] : tensor<?x?xf32>
    %y = math.exp %x : f32
    te.yield %y : f32
  }
  te.output %e : tensor<?x?xf32>
}
"""


def test_a_product_of_run_time_rows_and_columns_runs_as_tiles_with_its_epilogue():
    """q[i, k] * kt[k, j] over run-time i and j, then exp: blocks of 12 rows (one loop
    over them, the parallel one) of tiles 32 columns wide, then 16 wide, then single
    columns; each tile starts at 0 and stores exp of its sums (the init and exp nests
    are absorbed, and the scores, which only exp reads, are not stored). The rows of a
    last partial block run as tiles of 4 rows, then of single rows, of the same widths.
    The values are numpy's at sizes around every edge."""
    from xdsl.dialects import math
    from xdsl.parser import Parser

    from strato.targets.llvm.kernels import compile_loops

    module = Parser(make_context(), RUN_TIME_SCORES).parse_module()
    run_pipeline(make_context(), module, "convert-te-to-loops,schedule-default{threads=2 lanes=16 registers=32}")
    kernel = next(op for op in module.ops if isinstance(op, func.FuncOp))
    assert dict(kernel.attributes["schedule.run_time_tiles"].data) == {"s": StringAttr("12x32")}
    (nest,) = [op for op in kernel.body.block.ops if isinstance(op, ForOp)]
    assert (nest.axis.data, nest.loop_kind) == ("i.blocks", LoopKind.PARALLEL)
    loops = {op.axis.data: op for op in nest.walk() if isinstance(op, ForOp)}
    assert {"j.tiles32", "j.tiles16", "j.left", "i.rows4", "i.rows1"} <= set(loops)
    stores = [op for op in loops["j.store"].walk() if isinstance(op, memref.StoreOp)]
    assert [op.memref.name_hint for op in stores] == ["e_view"]
    assert any(isinstance(op, math.ExpOp) for op in loops["j.store"].walk())
    for height in (4, 1):
        inner = [op for op in loops[f"i.rows{height}"].walk() if isinstance(op, ForOp)]
        tiles = [(op.axis.data, op.trip_count) for op in inner if op.loop_kind == LoopKind.UNROLLED]
        assert tiles and all(count == height for _, count in tiles)
        assert not any(op.axis.data in ("j.outer", "j.inner", "j.tail") for op in inner)
    function = compile_loops(module, threads=2).function("scores")
    for n in (0, 1, 11, 12, 13, 15, 16, 17, 20, 23, 48, 49, 100):
        rng = np.random.default_rng(n)
        q = rng.standard_normal((n, 8)).astype(np.float32)
        kt = rng.standard_normal((8, n)).astype(np.float32)
        out = np.full(n * n, np.nan, np.float32)
        function(q, kt.ravel(), out, n)
        np.testing.assert_allclose(out.reshape(n, n), np.exp(q @ kt), rtol=1e-5, atol=1e-6)


RUN_TIME_ROWS = """
te.primitive @rows {
  %b = te.size "b" : index
  %n = te.size "n" : index
  %x = te.placeholder "x" sizes(%b, %n) : tensor<?x?x20xf32>
  %e = te.compute "e" (%i, %j, %k) sizes(%b, %n) : tensor<?x?x20xf32> {
    %v = te.read %x[%i, %j, %k] : tensor<?x?x20xf32>
    %y = math.exp %v : f32
    te.yield %y : f32
  }
  te.output %e : tensor<?x?x20xf32>
}
"""


RUN_TIME_BROADCAST_ROWS = """
te.primitive @rows {
  %b = te.size "b" : index
  %n = te.size "n" : index
  %x = te.placeholder "x" sizes(%b) : tensor<?x20xf32>
  %e = te.compute "e" (%i, %j, %k) sizes(%b, %n) : tensor<?x?x20xf32> {
    %v = te.read %x[%i, %k] : tensor<?x20xf32>
    %y = math.exp %v : f32
    te.yield %y : f32
  }
  te.output %e : tensor<?x?x20xf32>
}
"""


def test_two_outer_loops_to_run_time_bounds_run_as_one_parallel_loop():
    """A nest over a batch and a sequence of run-time sizes (each row of the batch
    broadcast over the sequence): the two loops run as one parallel loop over their
    product (each index its quotient or remainder), so that a batch of one still
    spreads its rows over the threads; the static inner loop of 20 runs as a vector of
    16 and one of the rest."""
    from xdsl.parser import Parser

    from strato.dialects.loop import LANES_ATTR, LoopKind
    from strato.targets.llvm.kernels import compile_loops

    module = Parser(make_context(), RUN_TIME_BROADCAST_ROWS).parse_module()
    run_pipeline(make_context(), module, "convert-te-to-loops,schedule-default{threads=2 lanes=16}")
    kernel = next(op for op in module.ops if isinstance(op, func.FuncOp))
    nest = [op for op in kernel.walk() if isinstance(op, ForOp)]
    assert [(op.axis.data, op.loop_kind) for op in nest] == [
        ("i.j.fused", LoopKind.PARALLEL), ("k", LoopKind.VECTORIZED),
    ]  # fmt: skip
    assert nest[1].attributes[LANES_ATTR].value.data == 16  # type: ignore[union-attr]
    function = compile_loops(module, threads=2).function("rows")
    for b, n in ((0, 3), (1, 1), (1, 37), (3, 5)):
        x = np.random.default_rng(b * n).standard_normal((b, 20)).astype(np.float32)
        out = np.full(b * n * 20, np.nan, np.float32)
        function(x, out, b, n)
        expected = np.broadcast_to(np.exp(x)[:, None, :], (b, n, 20))
        np.testing.assert_allclose(out.reshape(b, n, 20), expected, rtol=1e-5)


@pytest.mark.parametrize("threads", [1, 2])
def test_an_element_wise_nest_over_contiguous_tensors_runs_as_one_loop(threads: int):
    """exp over [b, n, 20] of run-time b and n, which both tensors hold row-major: one
    loop over all b * n * 20 elements at the buffers' flat indices, in vectors of 16
    then of 8 and 4, then the rest (one tail for the whole tensor, not one per row),
    the vectors' loop parallel on two threads; the values are the same at every size."""
    from xdsl.parser import Parser

    from strato.dialects.loop import LoopKind
    from strato.targets.llvm.kernels import compile_loops

    module = Parser(make_context(), RUN_TIME_ROWS).parse_module()
    run_pipeline(make_context(), module, f"convert-te-to-loops,schedule-default{{threads={threads} lanes=16}}")
    kernel = next(op for op in module.ops if isinstance(op, func.FuncOp))
    roots = [op for op in kernel.body.block.ops if isinstance(op, ForOp)]
    outer = LoopKind.PARALLEL if threads == 2 else LoopKind.SERIAL
    assert [(op.axis.data, op.loop_kind) for op in roots] == [
        ("i.j.k.flat.outer", outer), ("i.j.k.flat.by8", outer),
        ("i.j.k.flat.by4", outer), ("i.j.k.flat.tail", outer),
    ]  # fmt: skip
    loads = [op for op in kernel.walk() if isinstance(op, memref.LoadOp)]
    assert all(len(op.indices) == 1 for op in loads)
    function = compile_loops(module, threads=threads).function("rows")
    for b, n in ((0, 3), (1, 1), (1, 37), (3, 5), (2, 1000)):
        x = np.random.default_rng(b * n).standard_normal((b, n, 20)).astype(np.float32)
        out = np.full(b * n * 20, np.nan, np.float32)
        function(x.ravel(), out, b, n)
        np.testing.assert_allclose(out.reshape(b, n, 20), np.exp(x), rtol=1e-5)
