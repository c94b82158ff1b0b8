"""Building a kernel's IR from its schedule state.

Each stage's loops are its leaf variables in order; at the innermost loop the iteration
variables are computed back from the loop variables through the split and fuse
relations (plus the region offset of an attached stage), guarded where a split does not
divide or a region may leave its buffer, and the stage's template is cloned with them.
A stage attached to a loop gets the region its consumers read inside that loop (bound
inference on the affine accesses of their templates) or, attached after the loop's body,
the region its producer has just written.

Every loop carries its stage, its axis name, and `reduction`/`init` where they apply; a
loop marked for tensorization is handed to `strato.schedule.tensorize` once its subtree
is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from math import prod
from typing import Any

from xdsl.builder import Builder
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint

from strato.dialects.loop import (
    INIT_ATTR,
    REDUCTION_ATTR,
    STAGE_ATTR,
    ForOp,
    LoopKind,
    MemoryScope,
    ScopeAttr,
)
from strato.schedule.access import Affine, access_of, affine_of
from strato.schedule.errors import ScheduleError
from strato.schedule.state import Fuse, ScheduleState, Split, Stage, Template

Interval = tuple[Affine, int]
"""A value between `lo` (affine in IR values) and lo + span (span a constant)."""


def annotation_attr(value: Any) -> Attribute:
    """The attribute an annotation value becomes on its loop."""
    if value is True or value is None:
        return UnitAttr()
    if isinstance(value, bool):
        return IntegerAttr(int(value), 1)
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, f64)
    return StringAttr(str(value))


def physical_type(
    state: ScheduleState, buffer: int, compact: tuple[int, ...] | None = None
) -> MemRefType:
    """The memref type a buffer is allocated with: its padded shape (or the `compact`
    region shape), laid out and with aligned strides."""
    b = state.buffers[buffer]
    shape = list(compact if compact is not None else b.logical_shape)
    if b.layout is not None:
        shape = list(b.layout.new_shape(shape))
    # storage_align checked the full shape; a compacted region keeps its own shape when
    # no size reaches the alignment (it is only a performance hint)
    shape = aligned_shape(shape, b.align) or shape
    space: Attribute = NoneAttr() if b.scope == MemoryScope.GLOBAL else ScopeAttr(b.scope)
    return MemRefType(b.element_type, shape, memory_space=space)


def aligned_shape(shape: list[int], align: dict[int, tuple[int, int]]) -> list[int] | None:
    """`shape` with its last dimension grown until the stride of each aligned axis is
    its offset modulo its factor (None when no size up to factor more reaches it)."""
    shape = list(shape)
    for axis, (factor, offset) in sorted(align.items()):
        for _ in range(factor):
            if prod(shape[axis + 1 :]) % factor == offset % factor:
                break
            shape[-1] += 1
        else:
            return None
    return shape


@dataclass
class _Region:
    """The part of a stage's iteration space an attached nest computes: per iteration
    variable, an offset (affine in IR values defined at the attach point) and an extent."""

    lo: dict[str, Affine]
    extent: dict[str, int]


class KernelEmitter:
    """Rebuilds `state.kernel` as a new `func.func` (the old one is left alone)."""

    def __init__(self, state: ScheduleState):
        self.state = state
        self.ranges: dict[SSAValue, tuple[int, int]] = {}
        self.buffers: list[SSAValue] = []
        self.allocs: dict[int, memref.AllocOp] = {}
        self.regions: dict[str, dict[str, int]] = {}
        """The extents of the region each stage computed at a loop computes."""
        # Storage compaction: a local buffer whose writer is computed at a loop holds
        # only the region computed there, indexed relative to the region's offset.
        self.offsets: dict[int, list[Affine]] = {}

    def compactable(self, stage: Stage) -> bool:
        b = self.state.buffers[stage.buffer]
        return (
            not self.state.is_output(stage.buffer)
            and len(b.shape) > 0
            and [s for s in self.state.stages if s.buffer == stage.buffer] == [stage]
        )

    def read_only_after(self, stage: Stage, attached: list[Stage], inside: list[str]) -> bool:
        """Whether every reader of the buffer of `stage` (a root stage whose init nest,
        if any, is decomposed at one of the loops `inside` the loop) is computed after
        the loop `attached` are attached at."""
        # most loops have nothing computed after them: that is checked first, as this
        # runs at every loop of every rebuild
        after = [other for other in attached if other.attach.reverse]  # type: ignore[union-attr]
        if not after or not self.compactable(stage):
            return False
        if stage.init is not None and (stage.init_at is None or stage.init_at not in inside):
            return False  # an init nest that writes more than an iteration does
        if any(stage.buffer in pair for pair in self.state.copies):
            return False
        readers = [r for r in self.state.readers_of(stage.buffer) if r is not stage]
        return bool(readers) and all(any(r is other for other in after) for r in readers)

    def compact(self, stage: Stage, region: _Region, builder: Builder) -> None:
        """Allocate the stage's buffer at the region's extents (its allocation, which
        nothing uses before the stage is emitted, is replaced) and index it relative to
        the region's offsets from here on. A padded buffer is compacted only along its
        unpadded dimensions (else it keeps its allocation)."""
        n = stage.buffer
        b = self.state.buffers[n]
        names = [name for name, _ in stage.spatial[: len(b.shape)]]
        shape = []
        for d, var in enumerate(names):
            extent = region.extent[var]
            if b.padded is not None and b.padded[d] != b.shape[d]:
                # a padded dimension (written past its extent by a padded loop) only
                # whole: the region then spans the padding too
                lo = region.lo[var]
                if lo.terms or lo.constant or extent < b.shape[d]:
                    return
                extent = b.padded[d]
            shape.append(extent)
        old = self.allocs[n]
        new = memref.AllocOp([], [], physical_type(self.state, n, tuple(shape)))
        new.memref.name_hint = old.memref.name_hint
        if old.parent_block() is not None:
            old.parent_block().insert_op_before(new, old)  # type: ignore[union-attr]
            old.memref.replace_all_uses_with(new.memref)
            old.detach()
        old.erase()
        self.allocs[n] = new
        self.buffers[n] = new.memref
        self.offsets[n] = [region.lo[v] for v in names]

    # -- the kernel ----------------------------------------------------------------------

    def emit(self) -> func.FuncOp:
        old = self.state.kernel
        kernel = old.clone_without_regions()
        block = Block(arg_types=old.function_type.inputs.data)
        for new, arg in zip(block.args, old.body.block.args):
            new.name_hint = arg.name_hint
        kernel.body.add_block(block)
        builder = Builder(InsertPoint.at_end(block))
        # a local buffer is allocated just before the root nest that first writes it, as
        # convert-te-to-loops does, else at the start
        allocs = self.allocs
        for n, b in enumerate(self.state.buffers):
            if b.arg is not None:
                self.buffers.append(block.args[b.arg])
                continue
            allocs[n] = memref.AllocOp([], [], physical_type(self.state, n))
            if b.hint is not None:
                allocs[n].memref.name_hint = b.hint
            self.buffers.append(allocs[n].memref)
        placed: list[int] = []
        for stage in self.state.stages:
            if stage.attach is not None:
                continue
            for n in sorted(allocs):
                writer = self.state.writer_of(n)
                if n not in placed and writer is not None and _root_stage(self.state, writer) is stage:
                    builder.insert(allocs[n])
                    placed.append(n)
            self.emit_stage(stage, builder, None)
        copied = {n for pair in self.state.copies for n in pair}
        unplaced = [
            n for n in sorted(allocs)
            if n not in placed
            # a buffer no stage touches any more (its writer folded into another) is not
            # allocated at all
            and (n in copied or self.state.readers_of(n) or self.state.writer_of(n) is not None)
        ]  # fmt: skip
        for n in reversed(unplaced):
            first = block.first_op
            if first is None:
                block.add_op(allocs[n])
            else:
                block.insert_op_before(allocs[n], first)
        placed = unplaced + placed
        locals_ = [allocs[n].memref for n in placed]
        for src, dst in self.state.copies:
            builder.insert(memref.CopyOp(self.buffers[src], self.buffers[dst]))
        for value in locals_:
            builder.insert(memref.DeallocOp.get(value))
        builder.insert(func.ReturnOp())
        return kernel

    # -- a stage ---------------------------------------------------------------------------

    def emit_stage(self, stage: Stage, builder: Builder, region: _Region | None) -> None:
        if region is not None:
            self.regions[stage.name] = dict(region.extent)
        ext = stage.extents(region.extent if region is not None else None)
        if stage.init is not None and stage.init_at is None:
            self.emit_init(stage, builder, region, ext, 0, {})
        self.emit_level(stage, 0, builder, {}, ext, region)

    def emit_level(
        self,
        stage: Stage,
        pos: int,
        builder: Builder,
        ivs: dict[str, SSAValue],
        ext: dict[str, int],
        region: _Region | None,
    ) -> None:
        if pos == len(stage.leaves):
            self.emit_block(stage, stage.body, builder, ivs, ext, region, stage.root_vars)
            return
        var = stage.leaves[pos]
        if stage.init is not None and stage.init_at == var:
            self.emit_init(stage, builder, region, ext, pos, ivs)
        loop, inner = self.open_loop(stage, var, ext[var], builder)
        ivs = {**ivs, var: loop.induction_var}
        attached = self.state.attached_at(stage.name, var)
        regions = self.infer_regions(stage, pos, ivs, ext, region, attached, inner)
        if attached and region is None and self.read_only_after(stage, attached, stage.leaves[pos + 1 :]):
            # its readers all follow each iteration of this loop: the buffer holds
            # what one iteration writes
            here = self.root_intervals(stage, pos, ivs, ext, None, inner)
            names = [name for name, _ in stage.spatial]
            self.compact(stage, _Region({n: here[n][0] for n in names}, {n: here[n][1] + 1 for n in names}), inner)
        for other in attached:
            if not other.attach.reverse and self.compactable(other):  # type: ignore[union-attr]
                self.compact(other, regions[other.name], inner)
        for other in attached:
            if not other.attach.reverse:  # type: ignore[union-attr]
                self.emit_stage(other, inner, regions[other.name])
        self.emit_level(stage, pos + 1, inner, ivs, ext, region)
        for other in attached:
            if other.attach.reverse:  # type: ignore[union-attr]
                self.emit_stage(other, inner, regions[other.name])
        intrinsic = stage.tensorized.get(var)
        if intrinsic is not None:
            from strato.schedule.tensorize import tensorize

            tensorize(loop, intrinsic)

    def emit_init(
        self,
        stage: Stage,
        builder: Builder,
        region: _Region | None,
        ext: dict[str, int],
        pos: int,
        ivs: dict[str, SSAValue],
    ) -> None:
        """The init nest: before the update nest (pos 0, over the iteration variables) or
        decomposed before the leaf at `pos` (over the spatial leaves from there on)."""
        assert stage.init is not None
        if stage.init_at is None:
            loops_over = [(n, ext[n]) for n, _ in stage.spatial]
        else:
            loops_over = [
                (v, ext[v]) for v in stage.leaves[pos:] if not stage.is_reduction_var(v)
            ]
        ivs = dict(ivs)
        for var, extent in loops_over:
            loop, builder = self.open_loop(stage, var, extent, builder, init=True)
            ivs[var] = loop.induction_var
        spatial = [n for n, _ in stage.spatial]
        if stage.init_at is None:
            # the canonical init nest runs over the iteration variables themselves
            self.emit_template(stage, stage.init, builder, {v: ivs[v] for v in spatial}, region, spatial, [])
        else:
            self.emit_block(stage, stage.init, builder, ivs, ext, region, spatial)

    def open_loop(
        self, stage: Stage, var: str, extent: int, builder: Builder, init: bool = False
    ) -> tuple[ForOp, Builder]:
        kind = LoopKind.SERIAL if init else stage.kinds.get(var, LoopKind.SERIAL)
        loop, body = ForOp.build(0, extent, kind=kind, axis=var)
        loop.attributes[STAGE_ATTR] = StringAttr(stage.name)
        if init:
            loop.attributes[INIT_ATTR] = UnitAttr()
        elif stage.is_reduction_var(var):
            loop.attributes[REDUCTION_ATTR] = UnitAttr()
        if not init:
            annotations = dict(stage.annotations.get(var, {}))
            if stage.leaves and var == stage.leaves[0]:
                annotations.update(stage.annotations.get("", {}))  # the stage's own
            for key, value in annotations.items():
                loop.attributes[key] = annotation_attr(value)
        loop.induction_var.name_hint = _value_name(var)
        self.ranges[loop.induction_var] = (0, max(extent - 1, 0))
        builder.insert(loop)
        assert body.last_op is not None
        return loop, Builder(InsertPoint.before(body.last_op))

    # -- the body of a stage at its innermost loop ---------------------------------------------

    def emit_block(
        self,
        stage: Stage,
        template: Template,
        builder: Builder,
        ivs: dict[str, SSAValue],
        ext: dict[str, int],
        region: _Region | None,
        roots: list[str],
    ) -> None:
        values, guards = self.root_values(stage, ivs, ext, builder)
        self.emit_template(stage, template, builder, {r: values[r] for r in roots}, region, roots, guards)

    def emit_template(
        self,
        stage: Stage,
        template: Template,
        builder: Builder,
        values: dict[str, SSAValue],
        region: _Region | None,
        roots: list[str],
        guards: list[SSAValue],
    ) -> None:
        full = dict(stage.spatial + stage.reduce)
        guards = list(guards)
        if region is not None:
            for r in roots:
                lo = region.lo.get(r)
                if lo is None:
                    continue
                value = values[r]
                if lo.terms or lo.constant:
                    offset = self.emit_affine(lo, builder)
                    value = builder.insert(_index_op(arith.AddiOp, offset, value)).result
                    value.name_hint = _value_name(r)
                    values[r] = value
                bounds = lo.bounds(self.ranges.get)
                if bounds is None or bounds[0] < 0:
                    zero = self.constant(0, builder)
                    guards.append(builder.insert(arith.CmpiOp(value, zero, "sge")).result)
                if bounds is None or bounds[1] + region.extent[r] > full[r]:
                    limit = self.constant(full[r], builder)
                    guards.append(builder.insert(arith.CmpiOp(value, limit, "slt")).result)
        if guards:
            cond = guards[0]
            for g in guards[1:]:
                cond = builder.insert(arith.AndIOp(cond, g)).result
            then = Block()
            then.add_op(scf.YieldOp())
            builder.insert(scf.IfOp(cond, [], [then]))
            builder = Builder(InsertPoint.before(then.last_op))  # type: ignore[arg-type]
        mapping: dict[SSAValue, SSAValue] = {}
        names = stage.root_vars
        for arg, name in zip(template.vars, names):
            if name in values:
                mapping[arg] = values[name]
        for arg, b in zip(template.block.args[template.var_count :], template.buffers):
            mapping[arg] = self.buffers[b]
        args = zip(template.block.args[template.var_count :], template.buffers)
        rewritten = {
            arg: b
            for arg, b in args
            if self.state.buffers[b].layout is not None or b in self.offsets
        }
        for op in template.block.ops:
            if isinstance(op, memref.LoadOp | memref.StoreOp) and op.memref in rewritten:
                self.emit_access(op, rewritten[op.memref], mapping, builder)
                continue
            builder.insert(op.clone(mapping))

    def emit_access(
        self,
        op: memref.LoadOp | memref.StoreOp,
        buffer: int,
        mapping: dict[SSAValue, SSAValue],
        builder: Builder,
    ) -> None:
        """A load or store of a compacted buffer (relative to its region's offset, the
        difference simplified where both are affine in the same values) or a laid-out
        one (its indices mapped through the layout), or both."""
        indices = [mapping[i] for i in op.indices]
        offsets = self.offsets.get(buffer)
        if offsets is not None:
            for d, offset in enumerate(offsets):
                if not (offset.terms or offset.constant):
                    continue
                relative = affine_of(indices[d], _opaque_index)
                if relative is not None:
                    indices[d] = self.emit_affine(relative - offset, builder)
                else:
                    shift = self.emit_affine(offset, builder)
                    indices[d] = builder.insert(_index_op(arith.SubiOp, indices[d], shift)).result
        layout = self.state.buffers[buffer].layout
        if layout is not None:
            indices = layout.emit(indices, builder)
        target = mapping[op.memref]
        if isinstance(op, memref.LoadOp):
            load = builder.insert(memref.LoadOp.get(target, indices))
            load.res.name_hint = op.res.name_hint
            mapping[op.res] = load.res
        else:
            builder.insert(memref.StoreOp.get(mapping[op.value], target, indices))

    def root_values(
        self, stage: Stage, ivs: dict[str, SSAValue], ext: dict[str, int], builder: Builder
    ) -> tuple[dict[str, SSAValue], list[SSAValue]]:
        """The iteration variables' values from the loop variables `ivs`, and the
        conditions under which they are in range (non-dividing splits)."""
        values = dict(ivs)
        guards: list[SSAValue] = []
        for rel in reversed(stage.relations):
            if isinstance(rel, Split):
                if not all(c in values for c in rel.children):
                    continue
                total: SSAValue | None = None
                for i, child in enumerate(rel.children):
                    stride = prod(ext[c] for c in rel.children[i + 1 :])
                    term = values[child]
                    if stride != 1:
                        term = builder.insert(_index_op(arith.MuliOp, term, self.constant(stride, builder))).result
                    total = term if total is None else builder.insert(_index_op(arith.AddiOp, total, term)).result
                assert total is not None
                total.name_hint = _value_name(rel.parent)
                values[rel.parent] = total
                covered = prod(ext[c] for c in rel.children)
                if covered != ext[rel.parent] and rel.tail == "guard":
                    limit = self.constant(ext[rel.parent], builder)
                    guards.append(builder.insert(arith.CmpiOp(total, limit, "slt")).result)
            else:
                if rel.child not in values:
                    continue
                for p, value in self.unfuse(rel, values[rel.child], ext, builder).items():
                    values[p] = value
        return values, guards

    def unfuse(
        self, rel: Fuse, fused: SSAValue, ext: dict[str, int], builder: Builder
    ) -> dict[str, SSAValue]:
        result = {}
        for i, parent in enumerate(rel.parents):
            stride = prod(ext[p] for p in rel.parents[i + 1 :])
            value = fused
            if stride != 1:
                value = builder.insert(_index_op(arith.DivUIOp, value, self.constant(stride, builder))).result
            if i > 0:
                value = builder.insert(_index_op(arith.RemUIOp, value, self.constant(ext[parent], builder))).result
            value.name_hint = _value_name(parent)
            self.ranges[value] = (0, ext[parent] - 1)
            result[parent] = value
        return result

    # -- bound inference ---------------------------------------------------------------------

    def root_intervals(
        self,
        stage: Stage,
        pos: int,
        ivs: dict[str, SSAValue],
        ext: dict[str, int],
        region: _Region | None,
        builder: Builder,
    ) -> dict[str, Interval]:
        """Per iteration variable of `stage`, the values it takes inside its loop at `pos`
        (loops up to `pos` fixed at their induction variables, the inner ones free)."""
        iv: dict[str, Interval] = {}
        for n, var in enumerate(stage.leaves):
            if n <= pos:
                iv[var] = (Affine.variable(ivs[var]), 0)
            else:
                iv[var] = (Affine.const(0), ext[var] - 1)
        for rel in reversed(stage.relations):
            if isinstance(rel, Split):
                lo, span = Affine(), 0
                for i, child in enumerate(rel.children):
                    stride = prod(ext[c] for c in rel.children[i + 1 :])
                    lo = lo + iv[child][0].scale(stride)
                    span += stride * iv[child][1]
                if not lo.terms:
                    span = min(span, ext[rel.parent] - 1 - lo.constant)
                iv[rel.parent] = (lo, span)
            else:
                lo, span = iv[rel.child]
                if span == 0 and lo.terms:
                    fused = ivs[rel.child] if rel.child in ivs else self.emit_affine(lo, builder)
                    for p, value in self.unfuse(rel, fused, ext, builder).items():
                        iv[p] = (Affine.variable(value), 0)
                else:
                    for p in rel.parents:
                        iv[p] = (Affine.const(0), ext[p] - 1)
        result = {}
        for r in stage.root_vars:
            lo, span = iv[r]
            if region is not None and r in region.lo:
                lo = lo + region.lo[r]
            result[r] = (lo, span)
        return result

    def infer_regions(
        self,
        stage: Stage,
        pos: int,
        ivs: dict[str, SSAValue],
        ext: dict[str, int],
        region: _Region | None,
        attached: list[Stage],
        builder: Builder,
    ) -> dict[str, _Region]:
        if not attached:
            return {}
        here = self.root_intervals(stage, pos, ivs, ext, region, builder)
        known: dict[str, dict[str, Interval]] = {stage.name: here}
        regions: dict[str, _Region] = {}
        for other in attached:
            if other.attach.reverse:  # type: ignore[union-attr]
                regions[other.name] = self.consumer_region(stage, here, other)
                known[other.name] = _intervals(other, regions[other.name])
        # producers: consumers first, so a producer sees the regions of the stages
        # attached here that read it
        for other in reversed(attached):
            if other.attach.reverse:  # type: ignore[union-attr]
                continue
            regions[other.name] = self.producer_region(other, known)
            known[other.name] = _intervals(other, regions[other.name])
        return regions

    def producer_region(self, producer: Stage, known: dict[str, dict[str, Interval]]) -> _Region:
        """The region of `producer` that the stages computed in this scope read."""
        shape = self.state.buffers[producer.buffer].shape
        spans: list[list[tuple[Affine, int]] | None] = [[] for _ in shape]
        for reader in self.state.readers_of(producer.buffer):
            if reader is producer:
                continue
            intervals = known.get(reader.name) or _intervals(reader, None)
            for lo_hi in _read_intervals(reader, producer.buffer, intervals, shape):
                for d, item in enumerate(lo_hi):
                    if spans[d] is not None:
                        spans[d].append(item)  # type: ignore[union-attr]
        lo: dict[str, Affine] = {}
        extent: dict[str, int] = {}
        for d, (name, full) in enumerate(producer.spatial[: len(shape)]):
            lo[name], extent[name] = _union(spans[d], full)
        for name, full in producer.spatial[len(shape) :]:
            lo[name], extent[name] = Affine(), full  # the rank-0 stage's single loop
        return _Region(lo, extent)

    def consumer_region(self, producer: Stage, here: dict[str, Interval], consumer: Stage) -> _Region:
        """The region of `consumer` that reads only what `producer` has written so far.
        A variable that indexes a block and its place in the block covers the blocks
        written (each written whole: `check_reverse_compute_at` sees to it)."""
        written = [here[name] for name, _ in producer.spatial]
        mapping = reverse_mapping(consumer, producer.buffer, blocks=True)
        if mapping is None:
            # a later primitive changed what the consumer reads
            raise ScheduleError(
                f"stage {consumer.name}, computed after a loop of stage {producer.name}, would no "
                f"longer read stage {producer.name} at its own loop variables plus constants"
            )
        lo: dict[str, Affine] = {}
        extent: dict[str, int] = {}
        extents = dict(consumer.spatial)
        for d, item in enumerate(mapping):
            if item is None:
                continue
            w_lo, w_span = written[d]
            if isinstance(item, BlockIndex):
                if not item.inner:
                    lo[item.var] = w_lo.scale(item.factor)
                    extent[item.var] = (w_span + 1) * item.factor
                continue
            var, const = item
            lo[var] = w_lo - Affine.const(const)
            extent[var] = w_span + 1
            if not lo[var].terms:
                # what the producer wrote past the consumer's extent (a padded tail)
                extent[var] = max(min(extent[var], extents[var] - lo[var].constant), 1)
        for name, full in consumer.spatial:
            if name not in lo:
                lo[name], extent[name] = Affine(), full
        return _Region(lo, extent)

    # -- small IR helpers ------------------------------------------------------------------------

    def constant(self, value: int, builder: Builder) -> SSAValue:
        op = builder.insert(_index_constant(value))
        self.ranges[op.result] = (value, value)
        return op.result

    def emit_affine(self, a: Affine, builder: Builder) -> SSAValue:
        total: SSAValue | None = None
        for value, coeff in a.terms:
            term = value
            if coeff != 1:
                term = builder.insert(_index_op(arith.MuliOp, value, self.constant(coeff, builder))).result
            total = term if total is None else builder.insert(_index_op(arith.AddiOp, total, term)).result
        if total is None:
            return self.constant(a.constant, builder)
        if a.constant:
            total = builder.insert(_index_op(arith.AddiOp, total, self.constant(a.constant, builder))).result
        return total


# Index arithmetic and constants are built with `create`: the ops the constructors
# build (the same properties, in their order), without their generic argument parsing,
# as a rebuild of a kernel emits thousands of them.

_NO_OVERFLOW = arith.IntegerOverflowAttr("none")


def _index_op(kind: type[Operation], lhs: SSAValue, rhs: SSAValue) -> Operation:
    """`kind(lhs, rhs)` for an arith integer binary op (AddiOp, DivUIOp, ...)."""
    properties: dict[str, Attribute] = {}
    if issubclass(kind, arith.SignlessIntegerBinaryOperationWithOverflow):
        properties["overflowFlags"] = _NO_OVERFLOW
    return kind.create(operands=(lhs, rhs), result_types=(lhs.type,), properties=properties)


@cache
def _index_attr(value: int) -> IntegerAttr:
    return IntegerAttr(value, IndexType())


def _index_constant(value: int) -> arith.ConstantOp:
    """`arith.ConstantOp(IntegerAttr(value, IndexType()))`."""
    attr = _index_attr(value)
    return arith.ConstantOp.create(result_types=(attr.type,), properties={"value": attr})


def _root_stage(state: ScheduleState, stage: Stage) -> Stage:
    while stage.attach is not None:
        stage = state.stage(stage.attach.stage)
    return stage


def _opaque_index(value: SSAValue) -> bool:
    """Index values affine_of treats as variables when simplifying: all but the index
    arithmetic it sees through."""
    return not isinstance(value.owner, arith.ConstantOp | arith.AddiOp | arith.SubiOp | arith.MuliOp)


def _value_name(name: str) -> str:
    """An SSA name for a loop variable: `i.outer` -> `i_outer`, `i.0` -> `i_p0` (the
    printer would read a trailing `_0` as a uniquing suffix)."""
    parts = [f"p{part}" if part.isdigit() else part for part in name.split(".")]
    text = "".join(c if c.isalnum() or c == "_" else "_" for c in "_".join(parts))
    return text if text and not text[0].isdigit() else f"v{text}"


def _intervals(stage: Stage, region: _Region | None) -> dict[str, Interval]:
    """A stage's iteration variables over its whole (region of its) iteration space."""
    result: dict[str, Interval] = {}
    for name, full in stage.spatial + stage.reduce:
        if region is not None and name in region.lo:
            result[name] = (region.lo[name], region.extent[name] - 1)
        else:
            result[name] = (Affine(), full - 1)
    return result


def _read_intervals(
    reader: Stage, buffer: int, intervals: dict[str, Interval], shape: tuple[int, ...]
) -> list[list[tuple[Affine, int] | None]]:
    """For each load of `buffer` in `reader`'s template, per dimension the indices it
    reads (offset and span), None where the index is opaque."""
    template = reader.body
    arg = template.buffer_arg(buffer)
    names = dict(zip(template.vars, reader.root_vars))
    result = []
    for op in template.block.walk():
        if not isinstance(op, memref.LoadOp) or op.memref is not arg:
            continue
        access = access_of(op, lambda v: v in names)
        assert access is not None
        dims: list[tuple[Affine, int] | None] = []
        for index in access.indices:
            if index is None:
                dims.append(None)
                continue
            lo, span = Affine.const(index.constant), 0
            for var, coeff in index.terms:
                v_lo, v_span = intervals[names[var]]  # type: ignore[index]
                if coeff >= 0:
                    lo = lo + v_lo.scale(coeff)
                else:
                    lo = lo + v_lo.scale(coeff) + Affine.const(coeff * v_span)
                span += abs(coeff) * v_span
            dims.append((lo, span))
        result.append(dims)
    return result


def _union(items: list[tuple[Affine, int] | None] | None, full: int) -> tuple[Affine, int]:
    """One offset and extent covering every (offset, span); the whole dimension when
    they are opaque or their offsets differ in more than a constant."""
    if not items or any(i is None for i in items):
        return Affine(), full
    first = items[0][0]  # type: ignore[index]
    if any(set(i[0].terms) != set(first.terms) for i in items):  # type: ignore[index]
        return Affine(), full
    lo = min(i[0].constant for i in items)  # type: ignore[index]
    hi = max(i[0].constant + i[1] for i in items)  # type: ignore[index]
    base = Affine(first.terms, 0)
    if not base.terms:
        lo, hi = max(lo, 0), min(hi, full - 1)
        if hi < lo:
            return Affine.const(0), 1
    extent = hi - lo + 1
    if extent >= full and not base.terms:
        return Affine(), full
    return base + Affine.const(lo), min(extent, full) if not base.terms else extent


@dataclass(frozen=True)
class BlockIndex:
    """An index `var // factor` (the block, `inner` False) or `var % factor` (the place
    in the block, `inner` True): how a copy out of a blocked layout (NCHW16c -> NCHW)
    reads it."""

    var: str
    factor: int
    inner: bool


MappedIndex = tuple[str, int] | BlockIndex | None


def reverse_mapping(
    consumer: Stage, buffer: int, blocks: bool = False
) -> list[MappedIndex] | None:
    """How `consumer` indexes `buffer`: per dimension the spatial iteration variable and
    constant offset (var + c), or None for a constant index; None when some load
    indexes it otherwise, or two loads differ. With `blocks`, a pair of dimensions
    indexed `var // k` and `var % k` is a pair of `BlockIndex`es."""
    template = consumer.body
    arg = template.buffer_arg(buffer)
    names = dict(zip(template.vars, consumer.root_vars))
    spatial = {n for n, _ in consumer.spatial}
    mapping: list[MappedIndex] | None = None
    extents = dict(consumer.spatial + consumer.reduce)

    def ranges(value: SSAValue) -> tuple[int, int] | None:
        # the variables' ranges make a remainder a reshape leaves (`i % 197`) exact
        return (0, extents[names[value]] - 1) if value in names else None

    for op in template.block.walk():
        if not isinstance(op, memref.LoadOp) or op.memref is not arg:
            continue
        dims: list[MappedIndex] = []
        for value in op.indices:
            index = affine_of(value, lambda v: v in names, ranges)
            if index is None:
                block = _block_index(value, names) if blocks else None
                if block is None or block.var not in spatial:
                    return None
                dims.append(block)
                continue
            if not index.terms:
                dims.append(None)
                continue
            if len(index.terms) != 1 or index.terms[0][1] != 1:
                return None
            var = names[index.terms[0][0]]  # type: ignore[index]
            if var not in spatial:
                return None
            dims.append((var, index.constant))
        if not _each_variable_once(dims):
            return None
        if mapping is not None and mapping != dims:
            return None
        mapping = dims
    return mapping


def _block_index(value: SSAValue, names: dict[SSAValue, str]) -> BlockIndex | None:
    """`value` as `var // k` or `var % k` (unsigned, k a constant), if it is one."""
    op = value.owner
    if not isinstance(op, arith.DivUIOp | arith.RemUIOp) or op.lhs not in names:
        return None
    divisor = op.rhs.owner
    if not isinstance(divisor, arith.ConstantOp) or not isinstance(divisor.value, IntegerAttr):
        return None
    factor = divisor.value.value.data
    if factor < 1:
        return None
    return BlockIndex(names[op.lhs], factor, isinstance(op, arith.RemUIOp))


def _each_variable_once(dims: list[MappedIndex]) -> bool:
    """Whether each variable indexes one dimension, or one pair of dimensions as its
    block and its place in the block (by the same factor)."""
    plain = [d[0] for d in dims if isinstance(d, tuple)]
    pairs: dict[str, list[BlockIndex]] = {}
    for d in dims:
        if isinstance(d, BlockIndex):
            pairs.setdefault(d.var, []).append(d)
    if len(set(plain)) != len(plain) or set(plain) & set(pairs):
        return False
    return all(
        len(pair) == 2 and {b.inner for b in pair} == {False, True} and pair[0].factor == pair[1].factor
        for pair in pairs.values()
    )


def rebuild_kernel(
    state: ScheduleState, regions: dict[str, dict[str, int]] | None = None
) -> func.FuncOp:
    """A new kernel function built from `state` (the state's kernel is not touched), in
    one pass: a buffer computed at a loop is allocated at its region's size when the
    loop's nest finds the region. `regions` receives the extents of the region of each
    stage computed at a loop."""
    emitter = KernelEmitter(state)
    kernel = emitter.emit()
    if regions is not None:
        regions.update(emitter.regions)
    return kernel


__all__ = [
    "BlockIndex",
    "KernelEmitter",
    "aligned_shape",
    "annotation_attr",
    "physical_type",
    "rebuild_kernel",
    "reverse_mapping",
]
