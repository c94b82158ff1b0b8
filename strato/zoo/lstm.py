"""An LSTM language model (the "medium" model of Zaremba et al., "Recurrent Neural Network
Regularization", 2014, as in PyTorch's word_language_model example), as an ONNX model.

Tokens go in time-major, as ONNX's LSTM (layout 0) and the PyTorch example take them.
At the default sizes (vocabulary 10000, 2 layers of 650, sequence 35) the model has
19,780,400 parameters:

    tokens [seq, batch] (int64 token ids)
      -> encoder: Gather(encoder.weight [vocab, hidden], tokens)       [seq, batch, hidden]
      -> rnn.0: LSTM (forward, default activations, zero initial state)
         -> Squeeze the direction axis                                  [seq, batch, hidden]
      -> rnn.1 ... rnn.{layers - 1}: the same
      -> decoder: MatMul (decoder.weight [hidden, vocab]) + Add bias
      -> output [seq, batch, vocab] (logits)

The input is int64 token ids rather than a float32 one-hot encoding: that is what a
language model takes and what exporters produce, and a one-hot input would turn the
embedding lookup into a [seq, vocab] x [vocab, hidden] MatMul that no real model has.
Dropout is omitted (inference). The squeeze axes are a Constant node, so the initializers
are exactly the parameters.

The embedding is standard normal and the first LSTM's input weights have variance
1 / hidden; weights applied to LSTM outputs (recurrent weights, upper layers' input
weights, the decoder) have variance 16 / hidden, since those outputs are small (RMS about
0.25). So the gate pre-activations have standard deviation about 1 (the gates neither
saturate nor sit at 0.5), the LSTM outputs keep the same scale in every layer, and the
logits are O(1).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto

from strato.zoo.onnx_graph import GraphBuilder, value_info

GATES = 4
"""An ONNX LSTM stacks the input, output, forget and cell gates (iofc) in W, R and B."""

HIDDEN_STATE_GAIN = 16.0
"""Variance gain of weights applied to LSTM outputs (the recurrent weights, the input
weights of layers above the first, the decoder): those outputs have an RMS of about 0.25,
so a gain of 16 brings what they feed back to unit variance."""


def build_lstm(
    batch: int = 1,
    seed: int = 0,
    vocab: int = 10000,
    hidden: int = 650,
    seq_len: int = 35,
    layers: int = 2,
) -> onnx.ModelProto:
    """The LSTM language model over a `vocab`-word vocabulary, `layers` LSTM layers of
    width `hidden` (also the embedding width), `seq_len` time steps, weights from `seed`.

        model = build_lstm(vocab=100, hidden=32, seq_len=8)   # a test-sized one
    """
    if layers < 1:
        raise ValueError(f"an LSTM language model needs at least one layer, got {layers}")
    g = GraphBuilder(seed)
    g.constant("rnn.direction_axis", np.array([1], np.int64))
    embedding = g.rng.normal(0.0, 1.0, (vocab, hidden))
    x = g.node("Gather", [g.weight("encoder.weight", embedding), "tokens"], "encoder", axis=0)
    for layer in range(layers):
        name = f"rnn.{layer}"
        # The embedding is standard normal; every other input is an LSTM output.
        input_gain = 1.0 if layer == 0 else HIDDEN_STATE_GAIN
        w = g.rng.normal(0.0, np.sqrt(input_gain / hidden), (1, GATES * hidden, hidden))
        r = g.rng.normal(0.0, np.sqrt(HIDDEN_STATE_GAIN / hidden), (1, GATES * hidden, hidden))
        # B is the input bias then the recurrent bias, [1, 8 * hidden].
        b = g.rng.normal(0.0, 0.1, (1, 2 * GATES * hidden))
        inputs = [
            x,
            g.weight(f"{name}.weight_ih", w),
            g.weight(f"{name}.weight_hh", r),
            g.weight(f"{name}.bias", b),
        ]
        y = g.node("LSTM", inputs, name, hidden_size=hidden, direction="forward")
        x = g.node("Squeeze", [y, "rnn.direction_axis"], f"{name}.squeeze")
    g.matmul_add(x, "decoder", hidden, vocab, gain=HIDDEN_STATE_GAIN, output="output")
    return g.finish(
        "lstm_language_model",
        [value_info("tokens", [seq_len, batch], TensorProto.INT64)],
        [value_info("output", [seq_len, batch, vocab])],
    )
