"""DeformConv (2-D) as bilinear gathers and graph.matmul (`convert_sampling`): strides,
dilations, pads, groups, offset groups, mask and bias, against onnx's reference
evaluator through the graph interpreter; one case compiled; the diagnostics."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import strato
from strato.diagnostics import ModelImportError
from strato.frontends.onnx import import_onnx
from strato.interpreters.graph import run_graph


def deform_conv_feeds(
    x_shape, w_shape, out_hw, offset_group, with_bias, with_mask, seed=0
):
    rng = np.random.default_rng(seed)
    taps = w_shape[2] * w_shape[3]
    feeds = {
        "x": rng.standard_normal(x_shape).astype(np.float32),
        "w": rng.standard_normal(w_shape).astype(np.float32),
        "offset": rng.uniform(
            -1.5, 1.5, (x_shape[0], offset_group * 2 * taps, *out_hw)
        ).astype(np.float32),
    }
    if with_bias:
        feeds["b"] = rng.standard_normal(w_shape[0]).astype(np.float32)
    if with_mask:
        feeds["mask"] = rng.uniform(
            0, 1, (x_shape[0], offset_group * taps, *out_hw)
        ).astype(np.float32)
    return feeds


def deform_conv_model(feeds, out_shape, **attributes):
    names = [
        "x",
        "w",
        "offset",
        "b" if "b" in feeds else "",
        "mask" if "mask" in feeds else "",
    ]
    while not names[-1]:
        names.pop()
    node = helper.make_node("DeformConv", names, ["y"], **attributes)
    graph = helper.make_graph(
        [node],
        "deform_conv",
        [
            helper.make_tensor_value_info(name, TensorProto.FLOAT, array.shape)
            for name, array in feeds.items()
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    model.ir_version = 10
    return model


CASES = [
    # x shape, w shape, output size, attributes, bias, mask
    ((1, 2, 4, 4), (3, 2, 2, 2), (3, 3), {}, False, False),
    (
        (2, 2, 5, 5),
        (2, 2, 3, 3),
        (3, 3),
        {"pads": [1, 1, 1, 1], "strides": [2, 2]},
        True,
        False,
    ),
    ((1, 4, 5, 4), (4, 2, 2, 2), (3, 2), {"dilations": [2, 2], "group": 2}, True, True),
    ((1, 4, 4, 4), (2, 4, 2, 2), (3, 3), {"offset_group": 2}, False, True),
]


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "out_hw", "attributes", "bias", "mask"), CASES
)
def test_deform_conv_matches_reference(
    x_shape, w_shape, out_hw, attributes, bias, mask
):
    feeds = deform_conv_feeds(
        x_shape, w_shape, out_hw, attributes.get("offset_group", 1), bias, mask
    )
    out_shape = [x_shape[0], w_shape[0], *out_hw]
    model = deform_conv_model(
        feeds, out_shape, kernel_shape=list(w_shape[2:]), **attributes
    )
    (expected,) = ReferenceEvaluator(model).run(None, feeds)
    imported = import_onnx(model)
    (actual,) = run_graph(imported.module, [feeds[n] for n in imported.input_names])
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4)


def test_deform_conv_compiled():
    feeds = deform_conv_feeds((1, 2, 4, 4), (2, 2, 2, 2), (3, 3), 1, True, True, seed=1)
    model = deform_conv_model(feeds, [1, 2, 3, 3], kernel_shape=[2, 2])
    (expected,) = ReferenceEvaluator(model).run(None, feeds)
    (actual,) = strato.compile(model)(*feeds.values())
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-4)


def test_deform_conv_diagnostics():
    feeds = deform_conv_feeds((1, 2, 4, 4), (2, 2, 2, 2), (3, 3), 1, False, False)
    wrong_groups = deform_conv_model(feeds, [1, 2, 3, 3], group=3)
    with pytest.raises(ModelImportError, match="do not make 3 groups"):
        import_onnx(wrong_groups)
    wrong_size = deform_conv_model(feeds, [1, 2, 3, 3], strides=[2, 2])
    with pytest.raises(ModelImportError, match="does not match the output size"):
        import_onnx(wrong_size)
