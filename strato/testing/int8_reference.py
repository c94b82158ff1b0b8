"""Which reference computes 8-bit integer products exactly on this host.

onnxruntime's x86 kernels without VNNI multiply u8 by s8 with vpmaddubsw, which sums
each pair of products in int16 and saturates: its quantized convolutions and products
then differ from ONNX's reference (and from strato, which computes them exactly in
int32) wherever a pair of products passes 32767. With AVX-512 VNNI or AVX-VNNI, and on
other architectures, onnxruntime is exact. Tests that compare integer results exactly
compare with onnxruntime where it is exact, and with ONNX's reference evaluator
elsewhere (`onnx_reference`), or leave out the outputs only onnxruntime computes.
"""

from __future__ import annotations

import functools

import numpy as np
import onnx


@functools.cache
def onnxruntime_is_exact() -> bool:
    """Whether onnxruntime computes u8 x s8 products exactly on this host."""
    from strato.targets.llvm.dot_i8 import machine_features
    from strato.targets.llvm.host import host_target

    host = host_target()
    if "x86" not in host.triple:
        return True
    return bool(machine_features(host.features) & {"avx512vnni", "avxvnni"})


def onnx_reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The outputs of ONNX's reference evaluator (on the model converted to opset 21
    when it is older: the evaluator implements some operators from later opsets only)."""
    from onnx import version_converter
    from onnx.reference import ReferenceEvaluator

    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=21)
    if opset < 21:
        model = version_converter.convert_version(model, 21)
    return list(ReferenceEvaluator(model).run(None, feeds))


__all__ = ["onnx_reference", "onnxruntime_is_exact"]
