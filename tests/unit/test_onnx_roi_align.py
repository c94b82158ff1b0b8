"""RoiAlign with a fixed sampling ratio as bilinear gathers (`convert_sampling`): avg
and max, both coordinate modes, a spatial scale, rois reaching outside X, several
images, against onnx's reference evaluator through the graph interpreter; one case
compiled; the diagnostics."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import strato
from strato.diagnostics import ModelImportError
from strato.frontends.onnx import import_onnx
from strato.interpreters.graph import run_graph

X_SHAPE = (2, 3, 7, 6)
ROIS = np.array(
    [
        [0.0, 0.0, 5.0, 6.0],
        [1.5, 2.0, 3.0, 3.5],
        [-2.0, -1.0, 8.0, 9.0],
        [4.0, 5.0, 4.2, 5.1],
    ],
    np.float32,
)
BATCH_INDICES = np.array([0, 1, 1, 0], np.int64)


def roi_align_model(out_h=3, out_w=2, **attributes):
    node = helper.make_node(
        "RoiAlign",
        ["x", "rois", "idx"],
        ["y"],
        output_height=out_h,
        output_width=out_w,
        **attributes,
    )
    graph = helper.make_graph(
        [node],
        "roi_align",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, X_SHAPE),
            helper.make_tensor_value_info("rois", TensorProto.FLOAT, ROIS.shape),
            helper.make_tensor_value_info(
                "idx", TensorProto.INT64, BATCH_INDICES.shape
            ),
        ],
        [
            helper.make_tensor_value_info(
                "y", TensorProto.FLOAT, [len(ROIS), X_SHAPE[1], out_h, out_w]
            )
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])
    model.ir_version = 10
    return model


def feeds():
    x = np.random.default_rng(0).standard_normal(X_SHAPE).astype(np.float32)
    return {"x": x, "rois": ROIS, "idx": BATCH_INDICES}


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("coordinates", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize(
    ("sampling_ratio", "spatial_scale"), [(1, 1.0), (2, 0.5), (3, 1.0)]
)
def test_roi_align_matches_reference(mode, coordinates, sampling_ratio, spatial_scale):
    model = roi_align_model(
        mode=mode,
        coordinate_transformation_mode=coordinates,
        sampling_ratio=sampling_ratio,
        spatial_scale=spatial_scale,
    )
    inputs = feeds()
    (expected,) = ReferenceEvaluator(model).run(None, inputs)
    imported = import_onnx(model)
    (actual,) = run_graph(imported.module, [inputs[n] for n in imported.input_names])
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


def test_roi_align_compiled():
    model = roi_align_model(sampling_ratio=2)
    inputs = feeds()
    (expected,) = ReferenceEvaluator(model).run(None, inputs)
    (actual,) = strato.compile(model)(*inputs.values())
    np.testing.assert_allclose(actual, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ({}, "sampling_ratio 0"),
        ({"sampling_ratio": 2, "mode": "median"}, "mode 'median'"),
        ({"sampling_ratio": 2, "coordinate_transformation_mode": "corner"}, "'corner'"),
    ],
)
def test_roi_align_diagnostics(attributes, message):
    with pytest.raises(ModelImportError, match=message):
        import_onnx(roi_align_model(**attributes))
