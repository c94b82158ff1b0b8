"""The `graph` dialect: deep-learning operators on ranked tensors with value semantics.

Every operator declares its fusion pattern kind (`PatternKind`), which the fusion pass
reads to decide what may be merged into one kernel, and knows its own reference
semantics in numpy (`evaluate`), which the graph interpreter and the constant folder use.

Operators are built from a few families so that adding one is a few lines:

- `UnaryElementwiseOp`: one tensor in, same type out (relu, ...);
- `BroadcastBinaryOp`: two tensors in, numpy broadcasting (add, mul, ...);
- dedicated classes where the shape rule is special (matmul, dense, ...).

Example:

    func.func @mlp(%x: tensor<1x4xf32>) -> tensor<1x2xf32> {
      %w = graph.constant dense<0.5> : tensor<2x4xf32>
      %b = graph.constant dense<0.1> : tensor<2xf32>
      %y = graph.dense %x, %w, %b : (tensor<1x4xf32>, tensor<2x4xf32>, tensor<2xf32>) -> tensor<1x2xf32>
      %r = graph.relu %y : tensor<1x2xf32>
      func.return %r : tensor<1x2xf32>
    }
"""

from xdsl.ir import Dialect

from strato.dialects.graph import blocked, control, core, einsum, elementwise, layout, linalg, logic, nn, normalization, quant, reduce, resize, rnn, winograd
from strato.dialects.graph.base import (
    AnyTensor,
    BroadcastBinaryOp,
    GraphOp,
    PatternKind,
    UnaryElementwiseOp,
    broadcast_shapes,
    pattern_kind_of,
    static_shape,
)
from strato.dialects.graph.blocked import *  # noqa: F403
from strato.dialects.graph.control import *  # noqa: F403
from strato.dialects.graph.core import *  # noqa: F403
from strato.dialects.graph.einsum import *  # noqa: F403
from strato.dialects.graph.elementwise import *  # noqa: F403
from strato.dialects.graph.layout import *  # noqa: F403
from strato.dialects.graph.linalg import *  # noqa: F403
from strato.dialects.graph.logic import *  # noqa: F403
from strato.dialects.graph.nn import *  # noqa: F403
from strato.dialects.graph.normalization import *  # noqa: F403
from strato.dialects.graph.quant import *  # noqa: F403
from strato.dialects.graph.reduce import *  # noqa: F403
from strato.dialects.graph.resize import *  # noqa: F403
from strato.dialects.graph.rnn import *  # noqa: F403
from strato.dialects.graph.winograd import *  # noqa: F403

# Each family module lists its operations in OPS; the dialect is their union.
FAMILIES = (blocked, control, core, einsum, elementwise, layout, linalg, logic, nn, normalization, quant, reduce, resize, rnn, winograd)

Graph = Dialect("graph", [op for family in FAMILIES for op in family.OPS], [])
