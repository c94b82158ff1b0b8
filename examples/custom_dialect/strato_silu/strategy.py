"""The tensor expression of act.silu: one compute stage, x / (1 + exp(-x))."""

from collections.abc import Sequence

from strato import api
from strato_silu.dialect import SiluOp


@api.strategy(SiluOp)
def silu(pb: api.PrimitiveBuilder, op: SiluOp, inputs: Sequence[api.SSAValue]) -> list[api.SSAValue]:
    (x,) = inputs

    def body(s: api.ScalarBuilder, idx: list[api.SSAValue]) -> api.SSAValue:
        v = s.read(x, idx)
        return s.div(v, s.add(s.const(1.0), s.exp(s.neg(v))))

    return [pb.compute("silu", api.shape_of(x), body, api.element_type_of(x))]
