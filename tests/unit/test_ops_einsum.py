"""Einsum: ONNX import against onnxruntime through the graph interpreter and the LLVM
JIT (products, batched and attention-style contractions, sums, transposes, ellipses
with broadcasting, several operands, diagonals), the graph ops it becomes, diagnostics,
and ONNX's own node tests."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

# helpers shared with the layout tests (pytest puts this directory on sys.path)
from test_ops_layout import check, check_node_tests, floats, graph_model, ops_of

from strato.diagnostics import ModelImportError
from strato.dialects import graph
from strato.frontends.onnx import import_onnx


def einsum_model(equation: str, *operands: np.ndarray, constants: dict | None = None):
    names = [f"x{n}" for n in range(len(operands))]
    node = helper.make_node("Einsum", names + list(constants or {}), ["y"], name="node", equation=equation)
    output_type = helper.np_dtype_to_tensor_dtype(operands[0].dtype)
    return graph_model(
        [node], dict(zip(names, operands)), {"y": output_type}, constants or {}, opset=12
    )


CASES = {
    "matmul": ("ij,jk->ik", [(3, 4), (4, 5)]),
    "batched": ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    "attention_scores": ("bhid,bhjd->bhij", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    "attention_values": ("bhij,bhjd->bhid", [(2, 2, 3, 5), (2, 2, 5, 4)]),
    "transpose": ("ijk->kij", [(2, 3, 4)]),
    "row_sums": ("ij->i", [(3, 4)]),
    "dot": ("i,i->", [(5,)]*2),
    "outer": ("i,j->ij", [(3,), (4,)]),
    "implicit_output": ("ij,jk", [(3, 4), (4, 5)]),
    "ellipsis_broadcast": ("...ij,...jk->...ik", [(1, 3, 4), (2, 4, 5)]),
    "three_operands": ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    "summed_free_letter": ("ij,jk->k", [(3, 4), (4, 5)]),
    "trace": ("ii->", [(4, 4)]),
    "batch_diagonal": ("bii->bi", [(2, 3, 3)]),
    "spaces": ("i j , j k -> i k", [(3, 4), (4, 5)]),
}


@pytest.mark.parametrize("name", CASES)
def test_einsum_matches_onnxruntime(name: str):
    equation, shapes = CASES[name]
    operands = [floats(*shape) for shape in shapes]
    check(einsum_model(equation, *operands), operands, rtol=1e-5, atol=1e-5)


def test_einsum_with_a_constant_operand():
    x, w = floats(2, 3, 4), floats(4, 5)
    check(einsum_model("bij,jk->bik", x, constants={"w": w}), [x], rtol=1e-5, atol=1e-5)


def test_einsum_of_one_integer_tensor_transposes_and_sums():
    x = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    model = einsum_model("ijk->ki", x)
    check(model, [x])
    assert ops_of(model) == ["graph.einsum"]


def test_einsum_of_integer_tensors_multiplies_in_their_type():
    x = np.arange(12, dtype=np.int32).reshape(3, 4) - 5
    y = np.arange(20, dtype=np.int32).reshape(4, 5) - 7
    check(einsum_model("ij,jk->ik", x, y), [x, y])


@pytest.mark.parametrize(
    "equation, shapes, normalized",
    [
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], "bij,bjk->bik"),
        ("ij,jk", [(3, 3), (3, 3)], "ij,jk->ik"),
        ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)], "aij,ajk->aik"),
        ("ba,ab", [(3, 3), (3, 3)], "ba,ab->"),
        ("i...,i...", [(2, 3, 4), (2, 3, 4)], "iab,iab->ab"),
    ],
)
def test_the_equation_is_normalised(equation: str, shapes, normalized: str):
    operands = [floats(*shape) for shape in shapes]
    function = import_onnx(einsum_model(equation, *operands)).function
    (op,) = [op for op in function.body.block.ops if isinstance(op, graph.EinsumOp)]
    assert op.equation.data == normalized


def test_an_attention_product_is_scheduled_as_a_matrix_product():
    from test_schedule_default import cpu, kernels, loop_module

    from strato.transforms.schedule_default import TEMPLATE_ATTR, schedule_default

    model = einsum_model("bhqd,bhkd->bhqk", floats(1, 2, 16, 8), floats(1, 2, 32, 8))
    module = loop_module(model)
    schedule_default(module, cpu())
    (kernel,) = kernels(module)
    assert {k: v.data for k, v in kernel.attributes[TEMPLATE_ATTR].data.items()} == {"matmul": "dense"}


@pytest.mark.parametrize(
    "equation, shapes, message",
    [
        ("ij,jk->ik", [(3, 4), (5, 6)], r"letter 'j' has sizes 4 and 5"),
        ("ij->ik", [(3, 4)], r"output 'ik' of equation 'ij->ik' repeats a letter or names one no input has"),
        ("ij,jk->ik", [(3, 4)], r"equation 'ij,jk->ik' has 2 input terms for 1 inputs"),
        ("i1->i", [(3, 4)], r"equation 'i1->i' has the invalid character '1'"),
        ("ijk->i", [(3, 4)], r"term 'ijk' has 3 letters for input 0 of rank 2"),
    ],
)
def test_diagnostics_name_the_node(equation, shapes, message):
    node = helper.make_node(
        "Einsum", [f"x{n}" for n in range(len(shapes))], ["y"], name="node", equation=equation
    )
    onnx_graph = helper.make_graph(
        [node],
        "einsum",
        [
            helper.make_tensor_value_info(f"x{n}", TensorProto.FLOAT, shape)
            for n, shape in enumerate(shapes)
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(onnx_graph, opset_imports=[helper.make_opsetid("", 12)])
    with pytest.raises(ModelImportError, match=r"node 'node' \(Einsum\): " + message):
        import_onnx(model)


@pytest.mark.parametrize("mode", ["graph", "llvm"])
def test_onnx_node_tests(mode: str):
    check_node_tests(r"^test_einsum", mode, {})


def test_an_einsum_anchors_a_fusion_group_as_matmul_does():
    from test_graph_fuse_ops import fuse, groups

    assert graph.EinsumOp.PATTERN_KIND == graph.PatternKind.OUT_ELEMWISE_FUSABLE
    module = fuse(
        """
func.func @main(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x6x4xf32>, %m: tensor<1x2x8x6xf32>) -> tensor<1x2x8x6xf32> {
  %e = graph.exp %q : tensor<1x2x8x4xf32>
  %s = graph.einsum "bhqd,bhkd->bhqk" %e, %k : (tensor<1x2x8x4xf32>, tensor<1x2x6x4xf32>) -> tensor<1x2x8x6xf32>
  %a = graph.add %s, %m : (tensor<1x2x8x6xf32>, tensor<1x2x8x6xf32>) -> tensor<1x2x8x6xf32>
  func.return %a : tensor<1x2x8x6xf32>
}"""
    )
    # exp stays a kernel of its own (a lone op is not wrapped); add joins the einsum
    assert groups(module) == ["einsum_add"]
