"""A fixed-length feature vector of a scheduled loop-level kernel.

Features describe the loop program, not the knob values, so a cost model trained on one
operator says something about another (the TVM paper's loop-program features):

- global: executed floating-point operations, loops, nest depth, outer parallel extent,
  vector lanes, unrolled iterations per nest, tensorized loops, local buffer bytes,
  arithmetic intensity (flops per byte of the buffers' footprints);
- loop levels: for the nest doing the most work, outermost first, each loop's extent
  and a one-hot of its kind (serial, parallel, vectorized, unrolled) and whether it
  reduces;
- buffers (the most accessed first): written or read, local or not, its size, the
  stride of its innermost index in elements, the lanes of the vectorized loop around
  its busiest access (none when that loop is not vectorized: a copy inside another
  stage's nest shows how it is scheduled only here), and for each loop level of its busiest
  access counted from the innermost loop outwards the bytes touched (footprint from the
  affine index analysis of strato.schedule.access), the accesses made and their ratio
  (reuse);
- loop nests (the stages at the kernel's root, the most work first: loads, stores and
  arithmetic executed): the accesses and the arithmetic, whether the root loop is
  parallel, the kind and extent of the loop around its busiest access, that access's
  innermost stride, the widest vectorized loop and the most unrolled iterations in it.
  A kernel's stages other than its main one (a padding copy, a layout transform
  without arithmetic) weigh in its time and only show here.

Counts are log2(1 + x). `FEATURE_VERSION` changes whenever the layout does.

    vector = kernel_features(kernel)      # numpy float32 of length FEATURE_LENGTH
"""

from __future__ import annotations

import math

import numpy as np
from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation, SSAValue

from strato.dialects.loop import ForOp, LoopKind, MemoryScope, is_reduction_loop, memory_scope
from strato.schedule.access import affine_of

FEATURE_VERSION = 3

LEVELS = 10
"""Loop levels described for the busiest nest."""
BUFFERS = 6
"""Buffers described (the most accessed first)."""
BUFFER_LEVELS = 6
"""Loop levels, innermost first, of each buffer's footprint."""
NESTS = 4
"""Root loop nests described (the most work first)."""

_KINDS = (LoopKind.SERIAL, LoopKind.PARALLEL, LoopKind.VECTORIZED, LoopKind.UNROLLED)
GLOBAL_LENGTH = 10
LEVEL_LENGTH = 2 + len(_KINDS)
BUFFER_LENGTH = 6 + 3 * BUFFER_LEVELS
NEST_LENGTH = 7 + len(_KINDS)
FEATURE_LENGTH = (
    GLOBAL_LENGTH + LEVELS * LEVEL_LENGTH + BUFFERS * BUFFER_LENGTH + NESTS * NEST_LENGTH
)


def _log(x: float) -> float:
    return math.log2(1.0 + max(x, 0.0))


def _element_bytes(type_: MemRefType) -> int:
    width = getattr(type_.element_type, "bitwidth", 32)
    return max(1, (width + 7) // 8)


class _Loop:
    """What the features need of one loop.for, read once."""

    __slots__ = ("trip", "span", "kind", "iv", "reduction", "tensorized")

    def __init__(self, op: ForOp) -> None:
        lb, ub, step = op.lb.data, op.static_ub, op.step.data
        self.trip = max(0, (ub - lb + step - 1) // step)
        self.span = ub - 1 - lb
        self.kind = op.kind.data
        self.iv = op.body.block.args[0]
        self.reduction = is_reduction_loop(op)
        self.tensorized = "tensorized" in op.attributes


class _Site:
    """One load or store, the loops around it (outermost first) and how often it runs."""

    __slots__ = ("buffer", "is_write", "loops", "indices", "count", "_affines")

    def __init__(self, buffer: SSAValue, is_write: bool, loops: list[_Loop], indices, count: float):
        self.buffer = buffer
        self.is_write = is_write
        self.loops = loops
        self.indices = indices
        self.count = count
        self._affines: list[dict | None] | None = None

    @property
    def affines(self) -> list[dict | None]:
        """Each index as {value: coefficient}, None where it is not affine (computed once)."""
        if self._affines is None:
            affines = [affine_of(index) for index in self.indices]
            self._affines = [None if a is None else dict(a.terms) for a in affines]
        return self._affines


def _steps(shape: list[int], affines: list[dict | None], iv: SSAValue):
    """(dimension, elements a step of it spans, |coefficient of iv| or None where the index
    is not affine) per dimension, innermost first (row-major)."""
    row = 1
    for dim, affine in zip(reversed(shape), reversed(affines), strict=False):
        yield dim, row, None if affine is None else abs(affine.get(iv, 0))
        row *= dim


def _innermost_stride(site: _Site) -> float:
    """Elements the access moves by per step of its innermost loop (row-major)."""
    if not site.loops or not isinstance(site.buffer.type, MemRefType):
        return 0.0
    stride = 0.0
    shape = [max(d, 1) for d in site.buffer.type.get_shape()]
    for dim, row, coefficient in _steps(shape, site.affines, site.loops[-1].iv):
        if coefficient is None:
            return float(row * dim)  # an index it cannot follow: as far as the dimension
        stride += coefficient * row
    return stride


class _Nest:
    """One loop nest at the kernel's root (a stage, with those computed inside it)."""

    __slots__ = ("parallel", "accesses", "flops", "lanes", "unrolled", "heaviest")

    def __init__(self, parallel: bool) -> None:
        self.parallel = parallel
        self.accesses = 0.0
        self.flops = 0.0
        self.lanes = 1
        self.unrolled = 1
        self.heaviest: _Site | None = None

    def add(self, site: _Site) -> None:
        self.accesses += site.count
        if self.heaviest is None or site.count > self.heaviest.count:
            self.heaviest = site

    def features(self) -> list[float]:
        site = self.heaviest
        loop = site.loops[-1] if site is not None and site.loops else None
        kinds = [float(loop is not None and loop.kind == k) for k in _KINDS]
        return [
            _log(self.accesses),
            _log(self.flops),
            float(self.parallel),
            _log(loop.trip if loop is not None else 0),
            _log(_innermost_stride(site) if site is not None else 0.0),
            _log(self.lanes),
            _log(self.unrolled),
            *kinds,
        ]


def _ops(block):
    op = block.first_op
    while op is not None:
        yield op
        op = op.next_op


def kernel_features(kernel: func.FuncOp) -> np.ndarray:
    """The feature vector of a loop-level kernel (see the module docstring)."""
    sites: list[_Site] = []
    flops = 0.0
    loops = 0
    depth = 0
    tensorized = 0
    local_bytes = 0
    vector_lanes = 1
    unrolled = 1
    parallel = 1
    busiest: tuple[float, list[_Loop]] = (0.0, [])
    nests: list[_Nest] = []

    def visit(op: Operation, stack: list[_Loop], trips: float, unroll: int, outer_parallel: bool) -> None:
        nonlocal flops, loops, depth, tensorized, local_bytes, vector_lanes, unrolled
        nonlocal parallel, busiest
        for region in op.regions:
            for block in region.blocks:
                for inner in _ops(block):
                    if isinstance(inner, ForOp):
                        loop = _Loop(inner)
                        loops += 1
                        tensorized += loop.tensorized
                        kind = loop.kind
                        if kind == LoopKind.VECTORIZED:
                            vector_lanes = max(vector_lanes, loop.trip)
                        is_parallel = kind == LoopKind.PARALLEL
                        if is_parallel and outer_parallel:
                            parallel = max(parallel, loop.trip)
                        inner_unroll = unroll * (loop.trip if kind == LoopKind.UNROLLED else 1)
                        unrolled = max(unrolled, inner_unroll)
                        if not stack:
                            nests.append(_Nest(is_parallel))
                        nest = nests[-1]
                        if kind == LoopKind.VECTORIZED:
                            nest.lanes = max(nest.lanes, loop.trip)
                        nest.unrolled = max(nest.unrolled, inner_unroll)
                        stack.append(loop)
                        depth = max(depth, len(stack))
                        visit(inner, stack, trips * loop.trip, inner_unroll, outer_parallel and is_parallel)
                        stack.pop()
                    elif isinstance(inner, memref.LoadOp | memref.StoreOp):
                        site = _Site(inner.memref, isinstance(inner, memref.StoreOp), list(stack),
                                     inner.indices, trips)  # fmt: skip
                        sites.append(site)
                        if stack:
                            nests[-1].add(site)
                    elif isinstance(inner, arith.FloatingPointLikeBinaryOperation):
                        flops += trips
                        if stack:
                            nests[-1].flops += trips
                        if trips > busiest[0]:
                            busiest = (trips, list(stack))
                    elif isinstance(inner, memref.AllocOp):
                        type_ = inner.memref.type
                        if isinstance(type_, MemRefType):
                            size = 1
                            for d in type_.get_shape():
                                size *= max(d, 1)
                            local_bytes += size * _element_bytes(type_)
                    elif inner.regions:
                        visit(inner, stack, trips, unroll, outer_parallel)

    visit(kernel, [], 1.0, 1, True)

    # per buffer: the busiest access site and the total accesses
    per_buffer: dict[SSAValue, list] = {}
    for site in sites:
        count = site.count
        entry = per_buffer.setdefault(site.buffer, [0.0, 0.0, site, False])
        entry[0] += count
        if count > entry[1]:
            entry[1], entry[2] = count, site
        entry[3] = entry[3] or site.is_write

    total_bytes = 0.0
    buffer_rows: list[tuple[float, list[float]]] = []
    for buffer, (accesses, _, site, written) in per_buffer.items():
        type_ = buffer.type
        if not isinstance(type_, MemRefType):
            continue
        shape = [max(d, 1) for d in type_.get_shape()]
        elem = _element_bytes(type_)
        size = elem
        for d in shape:
            size *= d
        local = memory_scope(type_) != MemoryScope.GLOBAL
        affines = site.affines
        stride: float = 0.0
        opaque = 0.0
        if site.loops:
            for _, row, coefficient in _steps(shape, affines, site.loops[-1].iv):
                if coefficient is None:
                    opaque = 1.0
                else:
                    stride += coefficient * row
        innermost = site.loops[-1] if site.loops else None
        lanes = innermost.trip if innermost is not None and innermost.kind == LoopKind.VECTORIZED else 0
        features = [float(written), float(local), _log(size), _log(stride), opaque, _log(lanes)]
        footprint_top = float(size)
        for level in range(BUFFER_LEVELS):
            window = site.loops[len(site.loops) - 1 - level :] if level < len(site.loops) else None
            if window is None:
                features += [0.0, 0.0, 0.0]
                continue
            elements = 1.0
            for dim, affine in zip(shape, affines, strict=False):
                if affine is None:
                    elements *= dim
                    continue
                span = 1
                for loop in window:
                    c = affine.get(loop.iv, 0)
                    if c:
                        span += abs(c) * loop.span
                elements *= min(span, dim)
            count = 1.0
            for loop in window:
                count *= loop.trip
            features += [_log(elements * elem), _log(count), _log(count / elements)]
        total_bytes += min(footprint_top, size)
        buffer_rows.append((accesses, features))
    buffer_rows.sort(key=lambda row: -row[0])

    vector = [
        _log(flops),
        _log(loops),
        float(depth),
        _log(parallel),
        _log(vector_lanes),
        _log(unrolled),
        float(tensorized),
        _log(local_bytes),
        _log(flops / max(total_bytes, 1.0)),
        _log(len(sites)),
    ]
    nest = busiest[1]
    for level in range(LEVELS):
        if level < len(nest):
            loop = nest[level]
            kind = loop.kind
            vector += [_log(loop.trip), float(loop.reduction)]
            vector += [float(kind == k) for k in _KINDS]
        else:
            vector += [0.0] * LEVEL_LENGTH
    for index in range(BUFFERS):
        if index < len(buffer_rows):
            vector += buffer_rows[index][1]
        else:
            vector += [0.0] * BUFFER_LENGTH
    nests.sort(key=lambda n: -(n.accesses + n.flops))
    for index in range(NESTS):
        vector += nests[index].features() if index < len(nests) else [0.0] * NEST_LENGTH
    result = np.asarray(vector, dtype=np.float32)
    assert result.shape == (FEATURE_LENGTH,)
    return result
