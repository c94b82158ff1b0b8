"""The `act` dialect: one graph-level activation, `act.silu`."""

from collections.abc import Sequence

import numpy as np

from strato import api


@api.op_definition
class SiluOp(api.UnaryElementwiseOp):
    """SiLU (swish): result[i] = input[i] * sigmoid(input[i]).

        %y = act.silu %x : tensor<4x8xf32>

    Element-wise, so graph-fuse-ops fuses it with its neighbours (injective).
    """

    name = "act.silu"

    def evaluate(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        # The reference semantics, computed in f64 and rounded once.
        x = np.asarray(inputs[0])
        wide = x.astype(np.float64)
        with np.errstate(over="ignore"):
            return [np.asarray(wide / (1.0 + np.exp(-wide)), dtype=x.dtype)]


Act = api.make_dialect("act", [SiluOp])
