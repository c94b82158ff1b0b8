"""graph-prune-conv-taps: a convolution keeps only the taps that read its input."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings

from strato.context import make_context
from strato.dialects import graph
from strato.dialects.graph import static_shape
from strato.testing.equivalence import check_pipeline
from strato.testing.graph_programs import GraphProgram, dilated_conv_programs
from strato.transforms.graph_prune_conv_taps import (
    GraphPruneConvTapsPass,
    live_taps,
    output_bands,
)


def test_taps_in_the_padding_of_every_output_are_dropped():
    # DeepLabV3's ASPP: 14 rows, 3 taps dilated 36 with padding 36: only the middle one reads
    taps = live_taps(14, 14, 3, 1, 36, 36, 36)
    assert taps is not None
    assert (taps.first, taps.last, taps.pad_begin, taps.pad_end, taps.dilation) == (1, 1, 0, 0, 1)
    # dilated 12: the outer taps reach the first and last two rows: all stay
    assert live_taps(14, 14, 3, 1, 12, 12, 12) is None


def test_one_sided_padding_keeps_the_output_size():
    # 5 rows, taps dilated 4, padding 8 before and 0 after: tap 0 reads rows -8..-4
    taps = live_taps(5, 5, 3, 1, 4, 8, 0)
    assert taps is not None
    assert (taps.first, taps.last, taps.pad_begin, taps.pad_end, taps.dilation) == (1, 2, 4, 0, 4)


def _multiply_adds(program: GraphProgram) -> int:
    return sum(
        int(np.prod(static_shape(op.result)) * np.prod(static_shape(op.weight)[1:]))
        for op in program.module.walk()
        if isinstance(op, graph.ConvOp)
    )


@settings(max_examples=60, deadline=None)
@given(program=dilated_conv_programs())
def test_pruning_keeps_results(program: GraphProgram):
    before = _multiply_adds(program)
    report = check_pipeline(make_context(), program.module, [GraphPruneConvTapsPass()], 4)
    assert report.unsupported is None
    assert report.difference is None, report.difference.describe()
    assert _multiply_adds(program) <= before


def test_regions_of_different_taps_become_convolutions_of_their_own():
    # DeepLabV3's convolution dilated 12 over 14x14: 3 x 3 regions, 5.4x fewer products
    assert output_bands(14, 14, 3, 1, 12, 12) == [(0, 2, 2), (2, 12, 1), (12, 14, 2)]
    # an ordinary 3x3 convolution: its border outputs miss one tap, not worth a split
    assert len(output_bands(56, 56, 3, 1, 1, 1)) == 3
