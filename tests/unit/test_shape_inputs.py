"""Shape inference on a model without its weights' data finds the same shapes."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper, shape_inference

from strato import zoo
from strato.frontends.onnx.shape_inputs import MAX_INLINE_BYTES, without_weight_data


def _inferred(model) -> dict[str, str]:
    return {
        value.name: str(value.type)
        for value in shape_inference.infer_shapes(model).graph.value_info
    }


def test_zoo_models_infer_the_same_shapes_and_stay_unchanged():
    for name in ("resnet18", "lstm"):
        model = zoo.build_model(name)
        before = model.SerializeToString()
        light = without_weight_data(model)
        assert model.SerializeToString() == before
        assert light.ByteSize() < len(before) // 10
        assert _inferred(light) == _inferred(model)


def test_small_initializers_keep_their_values():
    """A Reshape's shape is read by inference: it stays an initializer with its data."""
    weight = numpy_helper.from_array(np.ones((64, 64), np.float32), "w")
    shape = numpy_helper.from_array(np.array([4, 1024], np.int64), "shape")
    graph = helper.make_graph(
        [
            helper.make_node("Add", ["x", "w"], ["s"]),
            helper.make_node("Reshape", ["s", "shape"], ["y"]),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [weight, shape],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    light = without_weight_data(model)
    assert [t.name for t in light.graph.initializer] == ["shape"]
    assert [i.name for i in light.graph.input] == ["x", "w"]
    assert weight.ByteSize() > MAX_INLINE_BYTES
    inferred = shape_inference.infer_shapes(light)
    (y,) = inferred.graph.output
    assert [d.dim_value for d in y.type.tensor_type.shape.dim] == [4, 1024]


def _one_weight_model(weight) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 64])],
        [weight],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_only_weights_the_checker_would_accept_lose_their_data():
    """A large weight leaves the light model only when its raw bytes are exactly what its
    shape and type ask for: any other weight keeps its data, for the checker to judge."""
    good = numpy_helper.from_array(np.ones((64, 64), np.float32), "w")
    assert [t.name for t in without_weight_data(_one_weight_model(good)).graph.initializer] == []

    short = numpy_helper.from_array(np.ones((64, 64), np.float32), "w")
    short.raw_data = short.raw_data[:-4]
    both = numpy_helper.from_array(np.ones((64, 64), np.float32), "w")
    both.float_data.append(1.0)
    for weight in (short, both):
        model = _one_weight_model(weight)
        assert without_weight_data(model) is model


@pytest.mark.parametrize("damage", ["short", "typed field too"])
def test_a_damaged_large_weight_is_still_refused_by_the_checker(damage):
    import strato
    from strato.diagnostics import StratoError

    weight = numpy_helper.from_array(np.ones((64, 64), np.float32), "w")
    if damage == "short":
        weight.raw_data = weight.raw_data[:-4]
        reason = "raw_data size (16380 bytes) is too small"
    else:
        weight.float_data.append(1.0)
        reason = "one and only one value field"
    with pytest.raises(StratoError, match="invalid ONNX model") as error:
        strato.compile(_one_weight_model(weight), cache=False)
    assert reason in str(error.value)
