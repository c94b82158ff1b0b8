"""strato-silu: a strato plugin adding the `act` dialect.

- `act.silu`, x * sigmoid(x), with its reference semantics (so the interpreter and
  equivalence checking cover it) and its tensor-expression strategy (so
  convert-graph-to-te lowers it to one compute stage);
- `act-fuse-silu`, which finds x * sigmoid(x) in a graph and makes it one `act.silu`;
- `act-expand-silu`, which lowers `act.silu` back to graph.sigmoid and graph.mul.

Importing the package registers all of it; the entry point in pyproject.toml makes
strato import it by itself once the package is installed.
"""

from strato import api

from strato_silu import strategy  # noqa: F401  (registers the strategy of act.silu)
from strato_silu.dialect import Act, SiluOp
from strato_silu.passes import ActExpandSiluPass, ActFuseSiluPass

api.register_dialect(Act)
api.register_pass(ActFuseSiluPass)
api.register_pass(ActExpandSiluPass)

__all__ = ["Act", "ActExpandSiluPass", "ActFuseSiluPass", "SiluOp"]
