"""Register tiles for the products of a kernel of run-time sizes.

Schedules need static extents, so a kernel that takes run-time sizes keeps its canonical
loops (`schedule_default`). Its products would then update one row of the result per
step of the reduction, loading and storing the row each time: attention's scores
(q k^T, whose columns are the run-time sequence) and their product with v (which
contracts the sequence). `tile_run_time_products` gives such an update nest the
register-blocked micro-kernel of the static dense template, with guards where the
static one has a fixed tile count:

    loop.for %l = 0 to %n            (rows)
      loop.for %m = 0 to %p          (columns; each access along them steps by one)
        loop.for %k = 0 to %q reduction
          c[.., l, m] = c[.., l, m] + f(a[.., l, k], b[.., k, m], ..)

becomes, for tiles of MR rows and NR columns (NR a multiple of the vector lanes):

    loop.for %lb = 0 to ceil(n / MR)                     (a block of rows)
      %here = min(MR, n - lb * MR)
      loop.for %f = 0 to %here / MR                      (a whole block: once or not at all)
        loop.for %mb = 0 to p / NR                       (whole column tiles)
          tile = c[rows, columns]                        (MR x NR, kept in registers)
          loop.for %k = 0 to %q reduction
            loop.for %r = 0 to MR unrolled { loop.for %v = 0 to NR vectorized {
              tile[r, v] = tile[r, v] + f(..) } }
          c[rows, columns] = tile
        (the columns left over, p mod NR of them, as the canonical nest)
      %left = %here mod MR                               (a last, partial block of rows)
      loop.for %t = 0 to %left / 4                       (tiles of 4 rows, as above)
      loop.for %t = 0 to %left - 4 * (%left / 4)         (tiles of 1 row, as above)

A loop to a run-time count of 0 or 1 stands for a branch. A static row or column count
takes whole tiles and a static tail instead. Every element of the result still takes
its terms in the order of the reduction, so the values do not change. The blocks of
rows are one loop, which `schedule_default` fuses with the loops around it (the batch,
the heads) into the loop it makes parallel.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, func, memref
from xdsl.dialects.builtin import (
    DictionaryAttr,
    Float32Type,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue

from strato.dialects.loop import (
    LANES_ATTR,
    REDUCTION_ATTR,
    STAGE_ATTR,
    ForOp,
    LoopKind,
    MemoryScope,
    ScopeAttr,
    YieldOp,
    is_init_loop,
    is_reduction_loop,
    loop_stage,
    memory_scope,
)

TILES_ATTR = "schedule.run_time_tiles"
"""Kernel attribute: the register tile (`"MRxNR"`) each tiled stage got."""

MAX_TILE_ROWS = 12
"""Most rows of a tile: more gains little once the loads of a row of b are amortized."""

PARTIAL_TILE_ROWS = (4,)
"""Rows of the tiles a last, partial block of rows runs as, before single rows (those
shorter than the block's tile): 11 rows left are two tiles of 4 and three of 1."""


@dataclass
class _Product:
    """An update nest `tile_run_time_products` takes (see `_match`)."""

    rows: ForOp
    columns: ForOp
    reductions: list[ForOp]
    accumulator: memref.LoadOp
    store: memref.StoreOp
    root: ForOp
    """The outermost loop around the nest, before which bounds are computed."""
    init: _Init | None = None
    epilogue: _Epilogue | None = None
    writes_result: bool = True
    """Whether the tiles store the result (False: only the epilogue reads it)."""

    def spatial_loops(self) -> list[ForOp]:
        """The loops from `root` to `columns`, outermost first."""
        loops = [self.columns]
        while loops[-1] is not self.root:
            parent = loops[-1].parent_op()
            assert isinstance(parent, ForOp)
            loops.append(parent)
        return loops[::-1]


@dataclass
class _Init:
    """The init nest of the product's stage: it stores `value` (a constant op of its
    body, or a value from outside it) into every element of the result."""

    nest: ForOp
    value: Operation | SSAValue

    def at(self, at: _Builder) -> SSAValue:
        if isinstance(self.value, SSAValue):
            return self.value
        return at.value(self.value.clone())


@dataclass
class _Epilogue:
    """The element-wise stage after the product that reads each element of its result
    once, at the same place (`read`), in a nest of the same loops (`loops`)."""

    loops: list[ForOp]
    read: memref.LoadOp

    def at(self, at: _Builder, ivs: dict[SSAValue, SSAValue], value: SSAValue | None) -> None:
        """The epilogue's body at `at`, its loops' induction variables those `ivs`
        gives (by the product's loops they stand for), the element read `value` (None:
        read from memory as the stage does)."""
        mapping = dict(ivs)
        if value is not None:
            mapping[self.read.res] = value
        for op in self.loops[-1].body.block.ops:
            if isinstance(op, YieldOp) or (value is not None and op is self.read):
                continue
            at.add(op.clone(value_mapper=mapping))


MIN_LANES = 4
"""The narrowest vectors a tile takes: a static count of columns below the target's
lanes (and at least this) is tiled by vectors of the largest power of two it holds."""


def tile_run_time_products(kernel: func.FuncOp, lanes: int, registers: int) -> dict[str, str]:
    """Give every update nest of `kernel` that `_match` takes a register tile of rows
    by vectors of `lanes` fp32, or narrower ones when its columns are fewer
    (`MIN_LANES`; `registers` vector registers hold the tile and a row of b); the tile
    of each stage tiled, by stage name."""
    if lanes < 2:
        return {}
    tiled: dict[str, str] = {}
    for loop in [op for op in kernel.walk() if isinstance(op, ForOp)]:
        if not kernel.is_ancestor(loop):
            continue  # in a nest a product before absorbed
        width = lanes
        if not loop.is_dynamic and MIN_LANES <= loop.trip_count < lanes:
            # fewer columns than a vector holds (attention's heads of 8): narrower vectors
            width = 1 << (loop.trip_count.bit_length() - 1)
        product = _match(loop, width)
        if product is None:
            continue
        rows, columns = _tile_shape(product, width, registers)
        _tile(product, rows, columns, width)
        tiled[loop_stage(loop) or "?"] = f"{rows}x{columns}"
    if tiled:
        kernel.attributes[TILES_ATTR] = _dictionary(tiled)
    return tiled


def _dictionary(entries: dict[str, str]) -> DictionaryAttr:
    return DictionaryAttr({key: StringAttr(value) for key, value in entries.items()})


def plain_loop(loop: ForOp) -> bool:
    """Whether `loop` is serial, from 0 by 1."""
    return loop.loop_kind == LoopKind.SERIAL and loop.lb.data == 0 and loop.step.data == 1


def only_loop_in(loop: ForOp) -> ForOp | None:
    """The loop that is all of `loop`'s body, if there is one."""
    ops = [op for op in loop.body.block.ops if not isinstance(op, YieldOp)]
    return ops[0] if len(ops) == 1 and isinstance(ops[0], ForOp) else None


def defined_outside(value: SSAValue, op: Operation) -> bool:
    """Whether `value` is defined outside `op`'s regions."""
    owner = value.owner
    defining = owner if isinstance(owner, Operation) else owner.parent_op()
    return defining is None or not op.is_ancestor(defining)


def _match(columns: ForOp, lanes: int) -> _Product | None:
    """The update nest whose loop over columns is `columns`, when it is one:
    `columns` and the loop around it (the rows) iterate over result axes of one stage,
    each the other's only content, from 0 by 1; the columns' body is a perfect nest of
    that stage's reduction loops around straight-line code that loads one element of
    the result and stores it back (the accumulator: indexed by the rows, then the
    columns last, and otherwise by values from outside the rows) and stores nothing
    else. Every other element it loads either does not depend on the column or is
    indexed by it last (so a vector of columns loads consecutive elements). A static
    count of columns must fill a vector, one of rows take two."""
    stage = loop_stage(columns)
    rows = columns.parent_op()
    if (
        stage is None
        or is_reduction_loop(columns)
        or is_init_loop(columns)
        or not plain_loop(columns)
        or not isinstance(rows, ForOp)
        or loop_stage(rows) != stage
        or is_reduction_loop(rows)
        or not plain_loop(rows)
        or only_loop_in(rows) is not columns
        or (not columns.is_dynamic and columns.trip_count < lanes)
        or (not rows.is_dynamic and rows.trip_count < 2)
    ):
        return None
    reductions: list[ForOp] = []
    inner = only_loop_in(columns)
    while inner is not None:
        if not is_reduction_loop(inner) or loop_stage(inner) != stage or not plain_loop(inner):
            return None
        if inner.is_dynamic and not defined_outside(inner.bound, rows):
            return None
        reductions.append(inner)
        inner = only_loop_in(inner)
    if not reductions:
        return None
    body = reductions[-1].body.block
    if any(op.regions for op in body.ops):
        return None
    stores = [op for op in body.ops if isinstance(op, memref.StoreOp)]
    if len(stores) != 1 or any(
        isinstance(op, memref.AllocOp | memref.DeallocOp | func.CallOp) for op in body.ops
    ):
        return None
    store = stores[0]
    result_type = store.memref.type
    assert isinstance(result_type, MemRefType)
    element = result_type.element_type
    if not isinstance(element, Float32Type | IntegerType) or element.bitwidth != 32:
        return None  # the lanes are those of 32-bit elements (f32, i32)
    indices = list(store.indices)
    if (
        not indices
        or indices[-1] is not columns.induction_var
        or rows.induction_var not in indices
        or any(
            index not in (rows.induction_var, columns.induction_var)
            and not defined_outside(index, rows)
            for index in indices
        )
    ):
        return None
    loads = [op for op in body.ops if isinstance(op, memref.LoadOp)]
    accumulators = [op for op in loads if op.memref is store.memref]
    if len(accumulators) != 1 or list(accumulators[0].indices) != indices:
        return None
    column = columns.induction_var
    for load in loads:
        if load is accumulators[0]:
            continue
        if column in load.indices and list(load.indices)[-1] is not column:
            return None
        if any(index is not column and _depends_on(index, column, body) for index in load.indices):
            return None
    root = rows
    while isinstance(root.parent_op(), ForOp):
        parent = root.parent_op()
        assert isinstance(parent, ForOp)
        root = parent
    for loop in (rows, columns):
        if loop.is_dynamic and not defined_outside(loop.bound, root):
            return None
    product = _Product(rows, columns, reductions, accumulators[0], store, root)
    product.init = _find_init(product)
    product.epilogue = _find_epilogue(product)
    product.writes_result = not _result_is_private(product)
    return product


def _same_loops(ours: list[ForOp], theirs: list[ForOp]) -> bool:
    """Whether two nests run over the same iterations (loop by loop: from 0 by 1 to
    the same bound)."""
    return len(ours) == len(theirs) and all(
        plain_loop(a) and plain_loop(b) and a.is_dynamic == b.is_dynamic and a.bound == b.bound
        for a, b in zip(ours, theirs, strict=True)
    )


def _perfect_nest(top: ForOp, depth: int) -> list[ForOp] | None:
    """The `depth` loops perfectly nested from `top` around straight-line code."""
    loops = [top]
    while len(loops) < depth:
        inner = only_loop_in(loops[-1])
        if inner is None:
            return None
        loops.append(inner)
    if any(op.regions for op in loops[-1].body.block.ops):
        return None
    return loops


def _same_place(indices, ours: list[ForOp], theirs: list[ForOp], product: _Product) -> bool:
    """Whether `indices`, in the nest of loops `theirs`, name the element the product's
    accumulator does in the nest of loops `ours`."""
    translate = {b.induction_var: a.induction_var for a, b in zip(ours, theirs, strict=True)}
    return [translate.get(index, index) for index in indices] == list(product.store.indices)


def _neighbour(loop: ForOp, step: int) -> ForOp | None:
    """The loop before (`step` -1) or after (+1) `loop` in its block, past ops without
    regions that touch no memory (index arithmetic)."""
    op = loop.prev_op if step < 0 else loop.next_op
    while op is not None and not isinstance(op, ForOp):
        if op.regions or isinstance(op, memref.LoadOp | memref.StoreOp | func.CallOp):
            return None
        op = op.prev_op if step < 0 else op.next_op
    return op


def _find_init(product: _Product) -> _Init | None:
    """The init nest of the product's stage, when it comes right before the update nest
    and stores one value into each element the update accumulates, at the same place."""
    ours = product.spatial_loops()
    nest = _neighbour(product.root, -1)
    if nest is None or not is_init_loop(nest) or loop_stage(nest) != loop_stage(product.root):
        return None
    loops = _perfect_nest(nest, len(ours))
    if loops is None or not _same_loops(ours, loops):
        return None
    body = [op for op in loops[-1].body.block.ops if not isinstance(op, YieldOp)]
    stores = [op for op in body if isinstance(op, memref.StoreOp)]
    if len(stores) != 1 or stores[0].memref is not product.store.memref:
        return None
    store = stores[0]
    if not _same_place(store.indices, ours, loops, product):
        return None
    value = store.value
    owner = value.owner
    if isinstance(owner, Operation) and owner in body:
        if owner.operands or owner.regions or len(body) != 2:
            return None
        return _Init(nest, owner)
    if len(body) != 1 or not defined_outside(value, nest):
        return None
    return _Init(nest, value)


def _find_epilogue(product: _Product) -> _Epilogue | None:
    """The element-wise stage right after the update nest, when its nest runs over the
    same iterations and reads the product's result once, at the element the update
    accumulates, and stores one element of another buffer (which it does not read)."""
    ours = product.spatial_loops()
    nest = _neighbour(product.root, 1)
    if nest is None or is_init_loop(nest) or loop_stage(nest) in (None, loop_stage(product.root)):
        return None
    loops = _perfect_nest(nest, len(ours))
    if loops is None or not _same_loops(ours, loops):
        return None
    body = list(loops[-1].body.block.ops)
    result = product.store.memref
    stores = [op for op in body if isinstance(op, memref.StoreOp)]
    reads = _loads_of(result, body)
    if (
        len(stores) != 1
        or stores[0].memref is result
        or len(reads) != 1
        or not _same_place(reads[0].indices, ours, loops, product)
        or _loads_of(stores[0].memref, body)
        or any(isinstance(op, memref.AllocOp | memref.DeallocOp | func.CallOp) for op in body)
        # the update reads what the epilogue writes: it must run after all of it
        or _loads_of(stores[0].memref, product.reductions[-1].body.block.ops)
    ):
        return None
    return _Epilogue(loops, reads[0])


def _loads_of(buffer: SSAValue, ops) -> list[memref.LoadOp]:
    """The loads among `ops` that read `buffer`."""
    return [op for op in ops if isinstance(op, memref.LoadOp) and op.memref is buffer]


def _result_is_private(product: _Product) -> bool:
    """Whether the product's result is a local buffer (or a view of one) that only its
    init, update and epilogue nests use: then the tiles need not store it."""
    if product.epilogue is None:
        return False
    result = product.store.memref
    base = result
    cast = result.owner
    if isinstance(cast, memref.ReinterpretCastOp):
        base = cast.source
    alloc = base.owner
    if not isinstance(alloc, memref.AllocOp) or memory_scope(alloc.memref.type) != MemoryScope.LOCAL:
        return False
    nests = [product.root, product.epilogue.loops[0]]
    if product.init is not None:
        nests.append(product.init.nest)
    for use in result.uses:
        if not any(nest.is_ancestor(use.operation) for nest in nests):
            return False
    return all(
        use.operation is cast or isinstance(use.operation, memref.DeallocOp) for use in base.uses
    ) if base is not result else True


def _depends_on(value: SSAValue, index: SSAValue, body: Block) -> bool:
    """Whether `value`, computed in `body`, depends on `index`."""
    owner = value.owner
    if not isinstance(owner, Operation) or owner.parent_block() is not body:
        return False
    return any(operand is index or _depends_on(operand, index, body) for operand in owner.operands)


def _tile_shape(product: _Product, lanes: int, registers: int) -> tuple[int, int]:
    """MR x NR: NR two vectors when the columns are of run-time count or fill two
    vectors evenly (or fill neither evenly), else one; MR rows as many as keep MR x
    NR / lanes accumulators, a row of b and two broadcasts of a in `registers`."""
    columns = product.columns
    if columns.is_dynamic:
        vectors = 2
    else:
        count = columns.trip_count
        vectors = 2 if count % (2 * lanes) == 0 or (count % lanes and count >= 2 * lanes) else 1
    rows = max(1, min(MAX_TILE_ROWS, (registers - vectors - 2) // vectors))
    if not product.rows.is_dynamic:
        rows = min(rows, product.rows.trip_count)
    return rows, vectors * lanes


class _Builder:
    """Appends ops at the end of a block (before its terminator, if any)."""

    def __init__(self, block: Block, before: Operation | None = None):
        self.block = block
        self.before = before if before is not None else block.last_op

    def add(self, op: Operation) -> Operation:
        """Append `op`."""
        if self.before is None:
            self.block.add_op(op)
        else:
            self.block.insert_op_before(op, self.before)
        return op

    def value(self, op: Operation) -> SSAValue:
        """Append `op`, of one result: the result."""
        return self.add(op).results[0]

    def index(self, value: int) -> SSAValue:
        return self.value(arith.ConstantOp(IntegerAttr(value, IndexType())))

    def bound(self, value: int | SSAValue) -> SSAValue:
        return self.index(value) if isinstance(value, int) else value

    def loop(self, bound: int | SSAValue, axis: str, kind: LoopKind, like: ForOp) -> tuple[ForOp, _Builder]:
        loop, body = ForOp.build(0, bound, 1, kind, axis)
        loop.induction_var.name_hint = axis.replace(".", "_")
        loop.attributes[STAGE_ATTR] = like.attributes[STAGE_ATTR]
        self.add(loop)
        return loop, _Builder(body)


def _axis(loop: ForOp) -> str:
    return loop.axis.data if loop.axis is not None else "?"


def _tile(product: _Product, mr: int, nr: int, lanes: int) -> None:
    """Replace `product`'s nest by MR x NR register tiles (see the module docstring)."""
    rows, columns = product.rows, product.columns
    block = rows.parent_block()
    assert block is not None
    outside = product.root.parent_block()
    assert outside is not None
    hoisted = _Builder(outside, product.root)
    here = _Builder(block, rows)
    row_axis, column_axis = _axis(rows), _axis(columns)

    # the columns: tiles of NR, then one vector wide (NR is more), then single columns
    widths = [nr, lanes] if nr > lanes else [nr]
    spans: list[tuple[int, int | SSAValue, int | SSAValue]] = []  # (width, tiles, first)
    done: int | SSAValue
    left_columns: int | SSAValue
    if columns.is_dynamic:
        done = hoisted.index(0)
        for width in widths:
            step = hoisted.index(width)
            tiles = hoisted.value(arith.DivUIOp(hoisted.value(arith.SubiOp(columns.bound, done)), step))
            spans.append((width, tiles, done))
            done = hoisted.value(arith.AddiOp(done, hoisted.value(arith.MuliOp(tiles, step))))
        left_columns = hoisted.value(arith.SubiOp(columns.bound, done))
    else:
        covered = 0
        for width in widths:
            count = (columns.trip_count - covered) // width
            if count:
                spans.append((width, count, covered))
            covered += count * width
        done, left_columns = covered, columns.trip_count - covered

    def tile_rows(at: _Builder, first: int | SSAValue, height: int) -> None:
        """A block of `height` rows from row `first`: its column tiles, then its
        columns left over."""
        first = at.bound(first)
        for width, count, start in spans:
            tiles, tile_body = at.loop(count, f"{column_axis}.tiles{width}", LoopKind.SERIAL, columns)
            offset = tile_body.value(arith.MuliOp(tiles.induction_var, tile_body.index(width)))
            offset = tile_body.value(arith.AddiOp(tile_body.bound(start), offset))
            _register_tile(product, tile_body, first, offset, height, width, lanes)
        if left_columns == 0:
            return
        row_loop, row_body = at.loop(height, f"{row_axis}.left", LoopKind.SERIAL, rows)
        row = row_body.value(arith.AddiOp(first, row_loop.induction_var))
        left, left_body = row_body.loop(left_columns, f"{column_axis}.left", LoopKind.SERIAL, columns)
        column = left_body.value(arith.AddiOp(left_body.bound(done), left.induction_var))
        _init_element(product, left_body, row, column)
        _clone_into(left_body, product.reductions[0], {rows.induction_var: row, columns.induction_var: column})
        if product.epilogue is not None:
            product.epilogue.at(left_body, _epilogue_ivs(product, row, column), None)

    def partial_rows(at: _Builder, count: int | SSAValue, first: int | SSAValue) -> None:
        """`count` (fewer than `mr`) rows from row `first`, as tiles of
        `PARTIAL_TILE_ROWS` rows while they last, then of single rows."""
        for height in [h for h in PARTIAL_TILE_ROWS if h < mr] + [1]:
            if isinstance(count, int):
                tiles, count = divmod(count, height)
                if not tiles:
                    continue
            elif height == 1:
                tiles = count
            else:
                tiles = at.value(arith.DivUIOp(count, at.index(height)))
            loop, body = at.loop(tiles, f"{row_axis}.rows{height}", LoopKind.SERIAL, rows)
            offset = body.value(arith.MuliOp(loop.induction_var, body.index(height)))
            tile_rows(body, body.value(arith.AddiOp(body.bound(first), offset)), height)
            if height == 1:
                return
            covered = tiles * height if isinstance(tiles, int) else at.value(arith.MuliOp(tiles, at.index(height)))
            if isinstance(first, int) and isinstance(covered, int):
                first += covered
            else:
                first = at.value(arith.AddiOp(at.bound(first), at.bound(covered)))
            if not isinstance(count, int):
                count = at.value(arith.SubiOp(count, covered))

    if rows.is_dynamic:
        tile_rows_count = hoisted.index(mr)
        last = hoisted.value(arith.AddiOp(rows.bound, hoisted.index(mr - 1)))
        blocks = hoisted.value(arith.DivUIOp(last, tile_rows_count))
        block_loop, block_body = here.loop(blocks, f"{row_axis}.blocks", LoopKind.SERIAL, rows)
        first = block_body.value(arith.MuliOp(block_loop.induction_var, tile_rows_count))
        remaining = block_body.value(arith.SubiOp(rows.bound, first))
        count = block_body.value(arith.MinUIOp(remaining, tile_rows_count))
        whole = block_body.value(arith.DivUIOp(count, tile_rows_count))
        partial = block_body.value(arith.RemUIOp(count, tile_rows_count))
        _, whole_body = block_body.loop(whole, f"{row_axis}.whole", LoopKind.SERIAL, rows)
        tile_rows(whole_body, first, mr)
        partial_rows(block_body, partial, first)
    else:
        blocks, rest = divmod(rows.trip_count, mr)
        block_loop, block_body = here.loop(blocks, f"{row_axis}.blocks", LoopKind.SERIAL, rows)
        first = block_body.value(arith.MuliOp(block_loop.induction_var, block_body.index(mr)))
        tile_rows(block_body, first, mr)
        if rest:
            partial_rows(here, rest, blocks * mr)
    rows.detach()
    rows.erase()
    for absorbed in (
        product.init.nest if product.init is not None else None,
        product.epilogue.loops[0] if product.epilogue is not None else None,
    ):
        if absorbed is not None:
            absorbed.detach()
            absorbed.erase()


def _register_tile(
    product: _Product, at: _Builder, first_row: SSAValue, first_column: SSAValue, mr: int, nr: int, lanes: int
) -> None:
    """The micro-kernel of the tile of `mr` x `nr` elements from (`first_row`,
    `first_column`): load it into a local buffer, update it over the reduction with
    its rows unrolled and its columns vectorized, store it back."""
    rows, columns = product.rows, product.columns
    result_type = product.store.memref.type
    assert isinstance(result_type, MemRefType)
    tile = memref.AllocOp.get(
        result_type.element_type, shape=[mr, nr], memory_space=ScopeAttr(MemoryScope.LOCAL)
    )
    at.add(tile)

    def rows_and_columns(outer: _Builder, phase: str) -> tuple[_Builder, list[SSAValue], dict]:
        row_loop, row_body = outer.loop(mr, f"{_axis(rows)}.{phase}", LoopKind.UNROLLED, rows)
        column_loop, body = row_body.loop(nr, f"{_axis(columns)}.{phase}", LoopKind.VECTORIZED, columns)
        if nr > lanes:
            column_loop.attributes[LANES_ATTR] = IntegerAttr(lanes, i64)
        row = body.value(arith.AddiOp(first_row, row_loop.induction_var))
        column = body.value(arith.AddiOp(first_column, column_loop.induction_var))
        at_tile = [row_loop.induction_var, column_loop.induction_var]
        return body, at_tile, {rows.induction_var: row, columns.induction_var: column}

    accumulator, store = product.accumulator, product.store
    body, at_tile, mapping = rows_and_columns(at, "load")
    if product.init is not None:
        value = product.init.at(body)
    else:
        indices = [mapping.get(index, index) for index in accumulator.indices]
        value = body.value(memref.LoadOp.get(accumulator.memref, indices))
    body.add(memref.StoreOp.get(value, tile, at_tile))

    outer, steps = at, {}
    for reduction in product.reductions:
        loop, outer = outer.loop(reduction.bound, _axis(reduction), LoopKind.SERIAL, reduction)
        loop.attributes[REDUCTION_ATTR] = reduction.attributes[REDUCTION_ATTR]
        steps[reduction.induction_var] = loop.induction_var
    body, at_tile, mapping = rows_and_columns(outer, "update")
    mapping.update(steps)
    for op in product.reductions[-1].body.block.ops:
        if isinstance(op, YieldOp):
            continue
        if op is accumulator:
            mapping[accumulator.res] = body.value(memref.LoadOp.get(tile, at_tile))
        elif op is store:
            body.add(memref.StoreOp.get(mapping.get(store.value, store.value), tile, at_tile))
        else:
            clone = op.clone(value_mapper=mapping)
            body.add(clone)

    body, at_tile, mapping = rows_and_columns(at, "store")
    value = body.value(memref.LoadOp.get(tile, at_tile))
    if product.writes_result:
        indices = [mapping.get(index, index) for index in store.indices]
        body.add(memref.StoreOp.get(value, store.memref, indices))
    if product.epilogue is not None:
        row, column = mapping[rows.induction_var], mapping[columns.induction_var]
        product.epilogue.at(body, _epilogue_ivs(product, row, column), value)
    at.add(memref.DeallocOp.get(tile))


def _epilogue_ivs(product: _Product, row: SSAValue, column: SSAValue) -> dict[SSAValue, SSAValue]:
    """What each induction variable of the epilogue's loops is at the element (`row`,
    `column`) of the product's nest."""
    assert product.epilogue is not None
    ivs = {}
    for ours, theirs in zip(product.spatial_loops(), product.epilogue.loops, strict=True):
        value = ours.induction_var
        if ours is product.rows:
            value = row
        elif ours is product.columns:
            value = column
        ivs[theirs.induction_var] = value
    return ivs


def _init_element(product: _Product, at: _Builder, row: SSAValue, column: SSAValue) -> None:
    """The init nest's store of the element (`row`, `column`), when there is one."""
    if product.init is None:
        return
    value = product.init.at(at)
    mapping = {product.rows.induction_var: row, product.columns.induction_var: column}
    indices = [mapping.get(index, index) for index in product.store.indices]
    at.add(memref.StoreOp.get(value, product.store.memref, indices))


def _clone_into(at: _Builder, loop: ForOp, mapping: dict[SSAValue, SSAValue]) -> None:
    """A copy of `loop` (and its body) at `at`, its uses of `mapping`'s keys replaced."""
    at.add(loop.clone(value_mapper=dict(mapping)))
