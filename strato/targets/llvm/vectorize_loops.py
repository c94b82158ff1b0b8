"""Vector code for `vectorized` loops, before the rest of the lowering to llvm.

A `vectorized` loop of W iterations whose body is straight-line (arith, math,
memref.load/store) is replaced by straight-line code in which each value that varies
with the induction variable is one `<W x T>` LLVM vector, and each value that does not
stays a scalar:

- a load or store whose address moves by one element per iteration is one vector
  load/store; an address that does not move is a scalar load, broadcast to every lane
  where a vector needs it; any other address is one scalar access per lane, assembled
  with `insertelement`: a constant stride at a constant offset from the first lane's
  address, a gather through a computed index at its own address;
- float and integer arithmetic, min/max, fma and the math functions LLVM has vector
  intrinsics for become vector instructions (keeping the op's fast-math flags), exp,
  log, erf and tanh of f32 the vector form of their inline arithmetic (`vector_math`); any
  other op is computed per lane and assembled into a vector where a vector needs it.

Index arithmetic stays scalar: the access analysis (`strato.schedule.access`) sees each
address as `base + stride * iv` (stride a constant; the base may hold any value the same
in every lane) to classify it, and the base is computed at the first lane.

The vector ops are llvm-dialect ops on values bridged from the loop level by
`builtin.unrealized_conversion_cast`, like every other pattern of the lowering; the
scalar ops it leaves are lowered by the usual patterns.

Vectorized copies side by side that together move a block of a transposed copy (what
the injective template's `transpose_blocks` makes: copy k reads `in[base + k + S * w]`
in lane w and writes `out[base_k + w]`, the input's rows contiguous across the copies)
are done together: each lane's input row is one vector load of the block's width, the
block is transposed in registers (log2 of its size rounds of two-vector shuffles), and
each copy stores its row with one vector store, where one scalar load per lane and
element would assemble each vector otherwise.

A loop is vectorized only when its lanes are independent: every buffer it writes is
read and written at one address per lane, and that address differs between lanes. Any
other `vectorized` loop (a body with nested loops or branches, a lane reading what
another lane writes, more than `MAX_VECTOR_LANES` iterations) is generated as a serial
loop, which computes the same values. A longer loop a schedule annotated with
`vector_lanes = W` (`LANES_ATTR`: a row of 399 elements, which no vector width divides)
is first strip-mined: a serial loop over vectors of W lanes, then one vector of the
lanes left over.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, llvm, memref
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    ModuleOp,
    VectorType,
    i32,
    i64,
)
from xdsl.dialects.func import FuncOp
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue

from strato.dialects.loop import LANES_ATTR, STAGE_ATTR, ForOp, LoopKind, YieldOp
from strato.schedule.access import (
    linear_coefficients,
    loop_variable_range,
    memref_layout,
)
from strato.targets.llvm import builders, vector_math
from strato.targets.llvm.memref_to_llvm import element_address
from strato.targets.llvm.op_tables import (
    CMPI_PREDICATES,
    FLOAT_BINARY,
    FLOAT_INTRINSICS,
    INT_BINARY,
)
from strato.targets.llvm.reduction_flags import same_index
from strato.targets.llvm.type_conversion import (
    POINTER,
    cast_one,
    element_byte_size,
)

MAX_VECTOR_LANES = 64
"""A vectorized loop with more iterations is generated as a serial loop (a schedule
splits a long loop and vectorizes the inner part)."""

def _is_straight_line(op: Operation) -> bool:
    return not op.regions and (
        op.dialect_name() in ("arith", "math")
        or isinstance(op, memref.LoadOp | memref.StoreOp | YieldOp)
    )


def _vector_element_ok(type_: Attribute) -> bool:
    """Element types vector code carries. Not i1: a buffer holds a bool per byte, a
    `<W x i1>` vector in memory one per bit, so bools are computed and stored per lane."""
    if isinstance(type_, AnyFloat):
        return True
    return isinstance(type_, IntegerType) and type_.width.data in (8, 16, 32, 64)


_CONVERSIONS = (
    arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp, arith.ExtFOp, arith.TruncFOp,
    arith.SIToFPOp, arith.UIToFPOp, arith.FPToSIOp, arith.FPToUIOp, arith.BitcastOp,
)  # fmt: skip
"""Conversions vectorized as one conversion of every lane (`VectorizedLoop.conversion`)."""


def _int_width(type_: Attribute) -> int:
    return type_.width.data if isinstance(type_, IntegerType) else 0


def _plain_numeric(type_: Attribute) -> bool:
    """i8 to i64 and f32 / f64: the types whose conversions are one vector instruction
    (the scalar lowering's special cases, unsigned 64-bit integers and the narrow
    floats, stay per lane)."""
    if isinstance(type_, IntegerType):
        return type_.width.data in (8, 16, 32, 64)
    return isinstance(type_, Float32Type | Float64Type)


def _vector_memory_ok(type_: Attribute) -> bool:
    """Whether W consecutive elements are one `<W x T>` load or store: not for i1, a
    byte each in a buffer but a bit each in an LLVM vector in memory."""
    return _vector_element_ok(type_) and not (
        isinstance(type_, IntegerType) and type_.width.data == 1
    )


@dataclass
class _Access:
    op: memref.LoadOp | memref.StoreOp
    stride: int | None  # in elements of the buffer per iteration; None when not affine


class _LoopVectorizer:
    """Replaces one `vectorized` loop by vector code (see the module docstring)."""

    def __init__(self, loop: ForOp):
        self.loop = loop
        self.width = loop.trip_count
        self.body = [op for op in loop.body.block.ops if not isinstance(op, YieldOp)]
        self._body_ops = set(self.body)
        self.iv = loop.induction_var
        self.inside: set[SSAValue] = {self.iv}
        for op in self.body:
            self.inside.update(op.results)
        self.written: set[SSAValue] = {
            op.memref for op in self.body if isinstance(op, memref.StoreOp)
        }
        self._uniform: dict[SSAValue, bool] = {}
        self._scalar: dict[SSAValue, SSAValue] = {}
        self._lane: dict[tuple[SSAValue, int], SSAValue] = {}
        self._vector: dict[SSAValue, SSAValue] = {}
        self._lane_constants: dict[int, SSAValue] = {}

    # -- analysis -------------------------------------------------------------------------

    def is_uniform(self, value: SSAValue) -> bool:
        """Whether `value` is the same in every iteration."""
        if value not in self.inside:
            return True
        if value is self.iv:
            return False
        if value in self._uniform:
            return self._uniform[value]
        op = value.owner
        assert isinstance(op, Operation)
        uniform = all(self.is_uniform(v) for v in op.operands)
        if isinstance(op, memref.LoadOp) and op.memref in self.written:
            uniform = False
        self._uniform[value] = uniform
        return uniform

    def is_symbol(self, value: SSAValue) -> bool:
        """The variables of the access analysis here: the induction variable, and every
        value the same in all lanes that is not a constant (a constant is a term)."""
        return value is self.iv or (self.is_uniform(value) and _constant_int(value) is None)

    def access(self, op: memref.LoadOp | memref.StoreOp) -> _Access:
        type_ = op.memref.type
        assert isinstance(type_, MemRefType)
        strides = memref_layout(type_).strides
        coefficients = linear_coefficients(op.indices, strides, self.is_symbol, loop_variable_range)
        step = self.loop.step.data
        return _Access(op, None if coefficients is None else coefficients.get(self.iv, 0) * step)

    def lanes_independent(self) -> bool:
        """Every written buffer is accessed at one address per lane, distinct lanes
        touching distinct elements."""
        for buffer in self.written:
            accesses = [
                op
                for op in self.body
                if isinstance(op, memref.LoadOp | memref.StoreOp) and op.memref is buffer
            ]
            first = accesses[0]
            stride = self.access(first).stride
            if stride is None or stride == 0:
                return False
            for other in accesses[1:]:
                if not all(
                    same_index(a, b)
                    for a, b in zip(first.indices, other.indices, strict=True)
                ):
                    return False
        return True

    def runs_per_lane(self, op: Operation) -> bool:
        """Whether `op` is computed lane by lane rather than as one vector op."""
        if isinstance(op, memref.LoadOp | memref.StoreOp):
            element = op.res.type if isinstance(op, memref.LoadOp) else op.value.type
            return not (self.access(op).stride == 1 and _vector_memory_ok(element))
        return not self.vectorizes_as_vector(op)

    def stores_vector_lanes(self, op: memref.StoreOp) -> bool:
        """Whether a strided store takes its lanes out of the vector that computes its
        value (one vector computation and W extracts, rather than the whole chain of
        its value computed W times)."""
        owner = op.value.owner
        if self.is_uniform(op.value) or not isinstance(owner, Operation):
            return False
        if owner not in self._body_ops or isinstance(owner, memref.LoadOp):
            return False
        stride = self.access(op).stride
        return (
            stride is not None
            and stride != 1
            and _vector_memory_ok(op.value.type)
            and self.vectorizes_as_vector(owner)
        )

    def values_needed_per_lane(self) -> set[SSAValue]:
        """The varying values some op uses lane by lane (so loads among them are also
        loaded per lane, where they stand)."""
        needed: set[SSAValue] = set()
        for op in reversed(self.body):
            uniform = all(self.is_uniform(r) for r in op.results)
            if uniform and not isinstance(op, memref.StoreOp):
                continue
            if isinstance(op, memref.StoreOp) and self.stores_vector_lanes(op):
                # the lanes of the stored vector are extracted: only the address is
                # computed per lane
                needed.update(v for v in op.indices if not self.is_uniform(v))
                continue
            if self.runs_per_lane(op) or any(r in needed for r in op.results):
                needed.update(v for v in op.operands if not self.is_uniform(v))
        return needed

    def body_vectorizes(self) -> bool:
        """Whether the body is straight-line code whose lanes are independent, whatever
        the number of lanes."""
        return all(_is_straight_line(op) for op in self.body) and self.lanes_independent()

    def can_vectorize(self) -> bool:
        return 1 < self.width <= MAX_VECTOR_LANES and self.body_vectorizes()

    # -- emission helpers -----------------------------------------------------------------

    def emit(self, op: Operation) -> Operation:
        block = self.loop.parent_block()
        assert block is not None
        block.insert_op_before(op, self.loop)
        return op

    def vector_type(self, scalar: Attribute) -> VectorType:
        return VectorType(scalar, [self.width])

    def to_llvm(self, value: SSAValue, type_: Attribute) -> SSAValue:
        if value.type == type_:
            return value
        cast, result = cast_one(value, type_)
        self.emit(cast)
        return result

    def lane_index(self, lane: int) -> SSAValue:
        if lane not in self._lane_constants:
            constant = self.emit(builders.constant(lane, i32))
            self._lane_constants[lane] = constant.results[0]
        return self._lane_constants[lane]

    # -- values ---------------------------------------------------------------------------

    def scalar(self, value: SSAValue) -> SSAValue:
        """A uniform value, computed once before the vector code."""
        if value not in self.inside:
            return value
        if value not in self._scalar:
            op = value.owner
            assert isinstance(op, Operation) and not isinstance(op, memref.LoadOp)
            self._scalar[value] = self.clone_with(op, self.scalar).results[0]
        return self._scalar[value]

    def lane(self, value: SSAValue, lane: int) -> SSAValue:
        """The scalar value of `value` in one lane."""
        if self.is_uniform(value):
            return self.scalar(value)
        key = (value, lane)
        if key not in self._lane:
            if value is self.iv:
                start, step = self.loop.lb.data, self.loop.step.data
                constant = arith.ConstantOp.from_int_and_width(
                    start + lane * step, IndexType()
                )
                self._lane[key] = self.emit(constant).results[0]
            else:
                op = value.owner
                assert isinstance(op, Operation)
                # loads are emitted per lane where they stand (see `vectorize`)
                assert not isinstance(op, memref.LoadOp), "lane of a load not emitted"
                cloned = self.clone_with(op, lambda v: self.lane(v, lane))
                self._lane[key] = cloned.results[value.index]
        return self._lane[key]

    def vector(self, value: SSAValue) -> SSAValue:
        """`value` as a `<W x T>` vector: a broadcast when it is uniform, lanes
        assembled with insertelement when it was computed per lane."""
        if value in self._vector:
            return self._vector[value]
        vector_type = self.vector_type(value.type)
        if self.is_uniform(value):
            scalar = self.scalar(value)
            undef = self.emit(llvm.UndefOp(vector_type)).results[0]
            single = self.emit(
                llvm.InsertElementOp(undef, scalar, self.lane_index(0))
            ).results[0]
            mask = DenseArrayBase.from_list(i32, [0] * self.width)
            result = self.emit(
                llvm.ShuffleVectorOp(single, undef, mask, vector_type)
            ).results[0]
        else:
            result = self.emit(llvm.UndefOp(vector_type)).results[0]
            for lane in range(self.width):
                result = self.emit(
                    llvm.InsertElementOp(
                        result, self.lane(value, lane), self.lane_index(lane)
                    )
                ).results[0]
        self._vector[value] = result
        return result

    def clone_with(
        self, op: Operation, operand: Callable[[SSAValue], SSAValue]
    ) -> Operation:
        mapping = {v: operand(v) for v in op.operands}
        return self.emit(op.clone(mapping))

    # -- ops ------------------------------------------------------------------------------

    def address(self, op: memref.LoadOp | memref.StoreOp) -> SSAValue:
        """Pointer to the element the first lane accesses."""
        type_ = op.memref.type
        assert isinstance(type_, MemRefType)
        base = self.to_llvm(op.memref, POINTER)
        indices = [self.to_llvm(self.lane(i, 0), i64) for i in op.indices]
        ops, address = element_address(base, indices, type_)
        for address_op in ops:
            self.emit(address_op)
        return address

    def vectorizes_as_vector(self, op: Operation) -> bool:
        """Whether a varying op becomes one vector instruction."""
        if not all(_vector_element_ok(r.type) for r in op.results):
            return False
        if isinstance(op, arith.SelectOp):
            # xDSL's llvm.select takes an i1 condition only: a varying one goes per
            # lane; a uniform one (a bool, computed as a scalar) picks whole vectors
            return self.is_uniform(op.cond) and all(
                _vector_element_ok(v.type) for v in (op.lhs, op.rhs)
            )
        if not all(_vector_element_ok(v.type) for v in op.operands):
            return False
        if isinstance(op, arith.CmpiOp):
            return True
        if vector_math.expands(type(op), self.vector_type(op.results[0].type)):
            return True
        if type(op) in _CONVERSIONS:
            source, target = op.operands[0].type, op.results[0].type
            if isinstance(op, arith.UIToFPOp) and _int_width(source) > 32:
                return False  # the scalar lowering's special case
            return _plain_numeric(source) and _plain_numeric(target)
        return type(op) in FLOAT_BINARY or type(op) in INT_BINARY or (
            type(op) in FLOAT_INTRINSICS or isinstance(op, arith.NegfOp)
        )

    def vector_op(self, op: Operation) -> SSAValue:
        operands = [self.vector(v) for v in op.operands]
        result_type = self.vector_type(op.results[0].type)
        if vector_math.expands(type(op), result_type):
            # exp, log, erf, tanh of f32 inline: LLVM would call the scalar function per lane
            ops, result = vector_math.expand(type(op), operands[0])
            for expanded in ops:
                self.emit(expanded)
            return result
        if type(op) in FLOAT_BINARY:
            flags = builders.fastmath(op.properties.get("fastmath"))
            new = builders.float_binary(FLOAT_BINARY[type(op)], *operands, flags)
        elif type(op) in INT_BINARY:
            new = builders.int_binary(INT_BINARY[type(op)], *operands)
        elif isinstance(op, arith.NegfOp):
            new = builders.fneg(operands[0])
        elif isinstance(op, arith.SelectOp):
            new = builders.select(self.scalar(op.cond), operands[1], operands[2])
        elif isinstance(op, arith.CmpiOp):
            new = builders.icmp(
                CMPI_PREDICATES[op.predicate.value.data], operands[0], operands[1]
            )
        elif type(op) in _CONVERSIONS:
            return self.conversion(op, operands[0], result_type)
        else:
            element = op.results[0].type
            name = f"{FLOAT_INTRINSICS[type(op)]}.v{self.width}{element}"
            flags = builders.fastmath(op.properties.get("fastmath"))
            new = builders.call_intrinsic(name, operands, result_type, flags)
        return self.emit(new).results[0]

    def conversion(self, op: Operation, value: SSAValue, result_type: VectorType) -> SSAValue:
        """A conversion of every lane, as the scalar lowering converts one
        (`arith_to_llvm`): float to integer saturating, unsigned integers to float
        through a wider signed integer."""
        source = op.operands[0].type
        target = op.results[0].type
        if isinstance(op, arith.ExtSIOp | arith.ExtUIOp | arith.TruncIOp):
            cast = {arith.ExtSIOp: llvm.SExtOp, arith.ExtUIOp: llvm.ZExtOp, arith.TruncIOp: llvm.TruncOp}
            return self.emit(builders.cast(cast[type(op)], value, result_type)).results[0]
        if isinstance(op, arith.BitcastOp):
            return self.emit(builders.cast(llvm.BitcastOp, value, result_type)).results[0]
        if isinstance(op, arith.ExtFOp | arith.TruncFOp):
            cast = llvm.FPExtOp if isinstance(op, arith.ExtFOp) else llvm.FPTruncOp
            return self.emit(builders.cast(cast, value, result_type)).results[0]
        if isinstance(op, arith.UIToFPOp):
            wide = self.vector_type(IntegerType(2 * source.width.data))
            value = self.emit(builders.cast(llvm.ZExtOp, value, wide)).results[0]
            return self.emit(builders.cast(llvm.SIToFPOp, value, result_type)).results[0]
        if isinstance(op, arith.SIToFPOp):
            return self.emit(builders.cast(llvm.SIToFPOp, value, result_type)).results[0]
        name = "llvm.fptosi.sat" if isinstance(op, arith.FPToSIOp) else "llvm.fptoui.sat"
        name = f"{name}.v{self.width}{target}.v{self.width}{source}"
        return self.emit(builders.call_intrinsic(name, [value], result_type)).results[0]

    def vectorize(self) -> None:
        self.per_lane = self.values_needed_per_lane()
        for op in self.body:
            if isinstance(op, memref.StoreOp):
                self.store(op)
            elif isinstance(op, memref.LoadOp):
                self.load(op)
            elif all(self.is_uniform(r) for r in op.results):
                continue  # computed on demand, once
            elif self.vectorizes_as_vector(op):
                self._vector[op.results[0]] = self.vector_op(op)
            # other varying ops are computed per lane on demand
        self.loop.detach()
        self.loop.erase()

    def load(self, op: memref.LoadOp) -> None:
        value = op.res
        if self.is_uniform(value):
            # in place: a later store in the body may not move above it
            self._scalar[value] = self.clone_with(op, self.scalar).results[0]
            return
        stride = self.access(op).stride
        element = value.type
        if stride == 1 and _vector_memory_ok(element):
            load = builders.load(
                self.address(op),
                self.vector_type(element),
                alignment=element_byte_size(element),
            )
            self._vector[value] = self.emit(load).results[0]
            if value not in self.per_lane:
                return
        # each lane's scalar, where the load stands: the lanes of a strided or
        # gathered load, or lanes per-lane users of a vector load need
        if stride is not None and _vector_memory_ok(element):
            for lane, pointer in enumerate(self.lane_addresses(op, stride)):
                load = builders.load(pointer, element, alignment=element_byte_size(element))
                self._lane[(value, lane)] = self.emit(load).results[0]
            return
        for lane in range(self.width):
            cloned = self.clone_with(op, lambda v, lane=lane: self.lane(v, lane))
            self._lane[(value, lane)] = cloned.results[0]

    def store(self, op: memref.StoreOp) -> None:
        stride = self.access(op).stride
        element = op.value.type
        if stride == 1 and _vector_memory_ok(element):
            vector = self.vector(op.value)
            address = self.address(op)
            self.emit(
                builders.store(vector, address, alignment=element_byte_size(element))
            )
            return
        if stride is not None and _vector_memory_ok(element):
            extract = op.value in self._vector and self.stores_vector_lanes(op)
            for lane, pointer in enumerate(self.lane_addresses(op, stride)):
                if extract:
                    value = self.extracted(self._vector[op.value], element, lane)
                else:
                    value = self.to_llvm(self.lane(op.value, lane), element)
                self.emit(builders.store(value, pointer, alignment=element_byte_size(element)))
            return
        for lane in range(self.width):
            self.clone_with(op, lambda v, lane=lane: self.lane(v, lane))

    def extracted(self, vector: SSAValue, element: Attribute, lane: int) -> SSAValue:
        """Lane `lane` of `vector` (xDSL's llvm dialect has no extractelement: a
        one-element llvm.vector.extract, bitcast to the element)."""
        single = VectorType(element, [1])
        name = f"llvm.vector.extract.v1{element}.v{self.width}{element}"
        index = self.emit(builders.constant(lane, i64)).results[0]
        part = self.emit(builders.call_intrinsic(name, [vector, index], single)).results[0]
        return self.emit(builders.cast(llvm.BitcastOp, part, element)).results[0]

    def lane_addresses(self, op: memref.LoadOp | memref.StoreOp, stride: int) -> list[SSAValue]:
        """The element of each lane of an access with a constant stride (in elements):
        one address computation for the first lane, a constant offset from it for the
        others."""
        first = self.address(op)
        element = op.res.type if isinstance(op, memref.LoadOp) else op.value.type
        return [first] + [
            self.emit(builders.gep(first, lane * stride, element)).results[0]
            for lane in range(1, self.width)
        ]


def _constant_int(value: SSAValue) -> int | None:
    op = value.owner
    if isinstance(op, arith.ConstantOp):
        attr = op.value
        data = getattr(getattr(attr, "value", None), "data", None)
        if isinstance(data, int):
            return data
    return None


def vectorize_loop(loop: ForOp) -> bool:
    """Replace `loop` by vector code if its lanes are independent; whether it did. A loop
    longer than `MAX_VECTOR_LANES` annotated with `LANES_ATTR` runs as vectors of that
    many lanes and one vector of the lanes left over (`_strip_mined`)."""
    vectorizer = _LoopVectorizer(loop)
    lanes = _annotated_lanes(loop)
    if loop.trip_count > MAX_VECTOR_LANES and lanes is not None:
        if not vectorizer.body_vectorizes():
            return False
        done = [vectorize_loop(piece) for piece in _strip_mined(loop, lanes)]  # each piece
        return all(done)
    if not vectorizer.can_vectorize():
        return False
    vectorizer.vectorize()
    return True


def _annotated_lanes(loop: ForOp) -> int | None:
    attr = loop.attributes.get(LANES_ATTR)
    value = getattr(getattr(attr, "value", None), "data", None)
    return value if isinstance(value, int) and 1 < value <= MAX_VECTOR_LANES else None


def _strip_mined(loop: ForOp, lanes: int) -> list[ForOp]:
    """`loop` as a serial loop over vectorized loops of `lanes` iterations, then one
    vectorized loop of the iterations left over; the vectorized loops, which replace it.

        loop.for %i = 0 to 399 vectorized {vector_lanes = 16}   ->
        loop.for %o = 0 to 384 step 16 { loop.for %k = 0 to 16 vectorized { %i = %o + %k } }
        loop.for %i = 384 to 399 vectorized"""
    lb, step, count = loop.lb.data, loop.step.data, loop.trip_count
    chunk = lanes * step
    whole = count // lanes
    attributes = {k: v for k, v in loop.attributes.items() if k != LANES_ATTR}
    axis = loop.axis.data if loop.axis is not None else None
    block = loop.parent_block()
    assert block is not None
    pieces: list[ForOp] = []

    def vectorized(start: int, stop: int, into: Block, before: Operation) -> tuple[ForOp, Block]:
        piece, body = ForOp.build(start, stop, step, LoopKind.VECTORIZED, axis)
        piece.attributes.update(attributes)
        into.insert_op_before(piece, before)
        pieces.append(piece)
        return piece, body

    def clone_body(into: Block, iv: SSAValue) -> None:
        mapping: dict[SSAValue, SSAValue] = {loop.induction_var: iv}
        terminator = into.last_op
        assert terminator is not None
        for op in loop.body.block.ops:
            if not isinstance(op, YieldOp):
                into.insert_op_before(op.clone(value_mapper=mapping), terminator)

    if whole:
        outer, outer_body = ForOp.build(lb, lb + whole * chunk, chunk, LoopKind.SERIAL)
        if STAGE_ATTR in attributes:
            outer.attributes[STAGE_ATTR] = attributes[STAGE_ATTR]
        block.insert_op_before(outer, loop)
        assert outer_body.last_op is not None
        _, body = vectorized(0, chunk, outer_body, outer_body.last_op)
        index = arith.AddiOp(outer.induction_var, body.args[0])
        assert body.last_op is not None
        body.insert_op_before(index, body.last_op)
        clone_body(body, index.result)
    if count % lanes:
        piece, body = vectorized(lb + whole * chunk, loop.static_ub, block, loop)
        clone_body(body, piece.induction_var)
    loop.detach()
    loop.erase()
    return pieces


# -- transposed blocks ------------------------------------------------------------------------


@dataclass(frozen=True)
class _Copy:
    """A vectorized loop that copies one element per lane: its load, its store, and the
    linearized addresses of both without the loop's own term (`load_stride` and
    `store_stride` elements per lane)."""

    vectorizer: _LoopVectorizer
    load: memref.LoadOp
    store: memref.StoreOp
    load_base: _Address
    store_base: _Address
    load_stride: int
    store_stride: int


@dataclass(frozen=True)
class _Address:
    """sum(coefficient * term) + constant, a term being a loop variable or the structure
    of an index computation the access analysis does not see through (a division of a
    fused loop variable): two copies of a loop body compute the same terms with values
    of their own, which compare equal here."""

    terms: frozenset[tuple[object, int]]
    constant: int

    def minus(self, other: _Address) -> tuple[bool, int]:
        """Whether the two differ by a constant only, and the constant."""
        return self.terms == other.terms, self.constant - other.constant


def copied(ops: Iterable[Operation]) -> tuple[memref.LoadOp, memref.StoreOp] | None:
    """The load and store of a body (a loop's, a stage's) that stores what it loads and
    does nothing else but index arithmetic."""
    load = store = None
    for op in ops:
        if isinstance(op, memref.LoadOp) and load is None:
            load = op
        elif isinstance(op, memref.StoreOp) and store is None:
            store = op
        elif isinstance(op, YieldOp):
            continue
        elif op.regions or not op.results or not all(isinstance(r.type, IndexType) for r in op.results):
            return None
    if load is None or store is None or store.value is not load.res:
        return None
    return load, store


def _copy(loop: ForOp, load: memref.LoadOp, store: memref.StoreOp) -> _Copy | None:
    vectorizer = _LoopVectorizer(loop)
    if not (_vector_memory_ok(load.res.type) and _is_buffer(load.memref) and _is_buffer(store.memref)):
        return None
    if load.memref is store.memref or not vectorizer.can_vectorize():
        return None
    iv, step = loop.induction_var, loop.step.data
    linear = [_linear_address(op, iv) for op in (load, store)]
    if linear[0] is None or linear[1] is None:
        return None
    (load_base, load_stride), (store_base, store_stride) = linear
    return _Copy(vectorizer, load, store, load_base, store_base, load_stride * step, store_stride * step)


def _is_buffer(value: SSAValue) -> bool:
    """Whether `value` is a whole buffer: a kernel argument (they do not alias) or an
    allocation, never a view of another."""
    if isinstance(value, BlockArgument):
        return isinstance(value.owner.parent_op(), FuncOp)
    return isinstance(value.owner, memref.AllocOp | memref.AllocaOp)


def _linear_address(
    op: memref.LoadOp | memref.StoreOp, iv: SSAValue
) -> tuple[_Address, int] | None:
    """The element `op` accesses as an `_Address` without the term of `iv`, and the
    coefficient of `iv`; None when `iv` is not a plain term of it."""
    type_ = op.memref.type
    assert isinstance(type_, MemRefType)
    terms: dict[object, int] = {}
    constant = 0
    for index, stride in zip(op.indices, memref_layout(type_).strides, strict=True):
        linear = _linear_index(index, iv)
        if linear is None:
            return None
        for term, coefficient in linear[0].items():
            terms[term] = terms.get(term, 0) + coefficient * stride
        constant += linear[1] * stride
    along = terms.pop(iv, 0)
    base = frozenset((term, c) for term, c in terms.items() if c)
    return _Address(base, constant), along


def _linear_index(value: SSAValue, iv: SSAValue) -> tuple[dict[object, int], int] | None:
    """`value` as (coefficient per term, constant); see `_Address`. None when `iv` is
    inside a term the analysis does not see through."""
    constant = _constant_int(value)
    if constant is not None:
        return {}, constant
    op = value.owner
    if isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp):
        lhs, rhs = _linear_index(op.lhs, iv), _linear_index(op.rhs, iv)
        if lhs is None or rhs is None:
            return None
        if isinstance(op, arith.MuliOp):
            if lhs[0] and rhs[0]:
                return _opaque(value, iv)
            (terms, factor), (_, scale) = (lhs, rhs) if not rhs[0] else (rhs, lhs)
            return {t: c * scale for t, c in terms.items()}, factor * scale
        sign = -1 if isinstance(op, arith.SubiOp) else 1
        terms = dict(lhs[0])
        for term, coefficient in rhs[0].items():
            terms[term] = terms.get(term, 0) + sign * coefficient
        return terms, lhs[1] + sign * rhs[1]
    if isinstance(op, arith.DivUIOp | arith.RemUIOp):
        exact = _exact_division(op, iv)
        if exact is not None:
            return exact
    if isinstance(value, BlockArgument):
        return {value: 1}, 0
    return _opaque(value, iv)


def _exact_division(
    op: arith.DivUIOp | arith.RemUIOp, iv: SSAValue
) -> tuple[dict[object, int], int] | None:
    """`(c * x + r) / c` as `x` and `(c * x + r) % c` as `r`, for `0 <= r < c` and `x`
    a sum of terms that are not negative (loop variables, unsigned quotients and
    remainders) with positive coefficients: a block of a blocked layout at an unrolled
    offset."""
    divisor = _constant_int(op.rhs)
    dividend = _linear_index(op.lhs, iv)
    if divisor is None or divisor <= 0 or dividend is None:
        return None
    terms, constant = dividend
    if not 0 <= constant < divisor:
        return None
    for term, coefficient in terms.items():
        if coefficient <= 0 or coefficient % divisor:
            return None
        if not isinstance(term, BlockArgument) and not (
            isinstance(term, tuple) and term[0] in ("arith.divui", "arith.remui")
        ):
            return None
    if isinstance(op, arith.RemUIOp):
        return {}, constant
    return {term: coefficient // divisor for term, coefficient in terms.items()}, 0


def _opaque(value: SSAValue, iv: SSAValue) -> tuple[dict[object, int], int] | None:
    key = _structure(value, iv)
    return None if key is None else ({key: 1}, 0)


def _structure(value: SSAValue, iv: SSAValue) -> object | None:
    """What computes `value`, as a hashable value (None when it depends on `iv`)."""
    if value is iv:
        return None
    op = value.owner
    if isinstance(value, BlockArgument) or not isinstance(op, Operation) or not op.results:
        return value
    if op.regions or isinstance(op, memref.LoadOp):
        return value  # not a pure function of its operands: itself
    operands = []
    for operand in op.operands:
        key = _structure(operand, iv)
        if key is None:
            return None
        operands.append(key)
    properties = tuple(sorted((name, str(v)) for name, v in op.properties.items()))
    return (op.name, tuple(operands), properties, _constant_int(value), value.index)


_Candidate = tuple[ForOp, memref.LoadOp, memref.StoreOp]


def _block_candidates(first: ForOp) -> list[_Candidate]:
    """The copy loops of as many iterations as `first` side by side from `first` on,
    with nothing but index arithmetic between them (at most `MAX_VECTOR_LANES`)."""
    found: list[_Candidate] = []
    op: Operation | None = first
    while op is not None and len(found) < MAX_VECTOR_LANES:
        if isinstance(op, ForOp) and op.loop_kind == LoopKind.VECTORIZED:
            same = not op.is_dynamic and op.trip_count == first.trip_count
            pair = copied(op.body.block.ops) if same else None
            if pair is None:
                break
            found.append((op, *pair))
        elif op.regions or not op.results or not all(isinstance(r.type, IndexType) for r in op.results):
            break
        op = op.next_op
    return found


def _transposed_block(found: list[_Candidate]) -> list[_Copy] | None:
    """The copies of a transposed block (see the module docstring) made of the
    candidates, or None when they do not make one."""
    if len(found) < 4:
        return None
    copies = []
    for loop, load, store in found:
        copy = _copy(loop, load, store)
        if copy is None:
            return None
        copies.append(copy)
    head = copies[0]
    if head.store_stride != 1 or head.load_stride in (0, 1):
        return None
    store_step = None
    for k, copy in enumerate(copies):
        if (copy.load.memref, copy.store.memref) != (head.load.memref, head.store.memref):
            return None
        if (copy.load_stride, copy.store_stride) != (head.load_stride, head.store_stride):
            return None
        same_load, load_offset = copy.load_base.minus(head.load_base)
        same_store, store_offset = copy.store_base.minus(head.store_base)
        if not (same_load and same_store) or load_offset != k:
            return None
        if k == 1:
            store_step = store_offset
        if k and store_offset != k * store_step:
            return None
    if abs(store_step) < head.vectorizer.width:
        return None  # the copies' rows would overlap
    return copies


def _transpose(copies: list[_Copy]) -> None:
    """Replace the copies of a transposed block by vector loads of the input's rows, a
    transpose in registers and vector stores of the output's rows."""
    head = copies[0].vectorizer
    lanes, rows = head.width, len(copies)
    element = copies[0].load.res.type
    size = 1 << max(lanes - 1, rows - 1).bit_length()  # the square transposed
    alignment = element_byte_size(element)
    first = head.address(copies[0].load)
    square = VectorType(element, [size])
    block: list[SSAValue] = []
    for lane in range(lanes):
        pointer = first if lane == 0 else head.emit(
            builders.gep(first, lane * copies[0].load_stride, element)
        ).results[0]
        row = head.emit(builders.load(pointer, VectorType(element, [rows]), alignment=alignment)).results[0]
        if rows < size:
            row = _shuffle(head, row, row, [*range(rows), *[0] * (size - rows)], square)
        block.append(row)
    if lanes < size:  # the square's rows past the lanes: never stored
        block += [head.emit(llvm.UndefOp(square)).results[0]] * (size - lanes)
    bit = 1
    while bit < size:
        swapped = list(block)
        for low in range(size):
            if low & bit:
                continue
            high = low | bit
            keep = [c if not c & bit else size + (c ^ bit) for c in range(size)]
            take = [c | bit if not c & bit else size + c for c in range(size)]
            swapped[low] = _shuffle(head, block[low], block[high], keep, square)
            swapped[high] = _shuffle(head, block[low], block[high], take, square)
        block = swapped
        bit <<= 1
    for k, copy in enumerate(copies):
        row = block[k]
        if lanes < size:
            row = _shuffle(copy.vectorizer, row, row, list(range(lanes)), VectorType(element, [lanes]))
        address = copy.vectorizer.address(copy.store)
        copy.vectorizer.emit(builders.store(row, address, alignment=alignment))
    for copy in copies:
        copy.vectorizer.loop.detach()
        copy.vectorizer.loop.erase()


def _shuffle(
    at: _LoopVectorizer, a: SSAValue, b: SSAValue, mask: list[int], type_: VectorType
) -> SSAValue:
    """Lanes of `a` then `b` picked by `mask`."""
    pick = DenseArrayBase.from_list(i32, mask)
    return at.emit(llvm.ShuffleVectorOp(a, b, pick, type_)).results[0]


def vectorize_loops(module: ModuleOp) -> list[ForOp]:
    """Vectorize every `vectorized` loop of `module` that can be (see the module
    docstring); returns the ones left to run as serial loops."""
    left: list[ForOp] = []
    loops: Sequence[ForOp] = [
        op
        for op in module.walk()
        if isinstance(op, ForOp) and op.loop_kind == LoopKind.VECTORIZED
    ]
    done: set[ForOp] = set()
    not_blocks: set[ForOp] = set()  # looked at as part of a block that is not one
    for loop in loops:
        if loop in done:
            continue
        if loop.is_dynamic:
            # lanes known only at run time: a serial loop (LLVM's own vectorizer may
            # take it, with a scalar remainder)
            left.append(loop)
            continue
        candidates = [] if loop in not_blocks else _block_candidates(loop)
        copies = _transposed_block(candidates)
        if copies is not None:
            done.update(copy.vectorizer.loop for copy in copies)
            _transpose(copies)
            continue
        not_blocks.update(candidate[0] for candidate in candidates)
        if not vectorize_loop(loop):
            left.append(loop)
    return left
