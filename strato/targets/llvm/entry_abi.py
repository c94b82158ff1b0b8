"""The C ABI of a compiled model: a named entry that returns a status, internal kernels,
and heap allocations that are checked.

A lowered model is one llvm-dialect module: kernels, and an entry function (`@main` after
import) that allocates the arena of intermediate buffers that graph-plan-memory planned
(one heap allocation per call, so calls from two threads never share it) and calls the
kernels. `finalize_entry` makes it a module a C program can link and a caller can trust:

* the entry gets a model-prefixed public name (`mlp_run`); every other function defined in
  the module becomes `internal`, so two models link into one program;
* the entry returns an `i32` status, `STATUS_OK` (0) or `STATUS_OUT_OF_MEMORY` (1): every
  heap allocation's result (`ALLOCATORS`) is compared with null, and a failure frees what the
  function still holds and returns the status to its caller, up to the entry. Generated
  code never writes through a null pointer, whatever the machine's memory.

    %p = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
    <rest>
->
    %p = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
    llvm.store %p, %slot                            // freed again on failure
    %null = llvm.mlir.zero : !llvm.ptr
    %failed = llvm.icmp "eq" %p, %null : !llvm.ptr
    llvm.cond_br %failed, ^failure(%c1 : i32), ^next
  ^next:
    <rest>
  ^failure(%status: i32):
    llvm.call @free(<each slot>)
    llvm.return %status : i32

Functions that neither allocate nor call one that does keep their `void` type.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp, StringAttr, i32, i64
from xdsl.ir import Block, Operation, SSAValue

from strato.dialects.graph.dims import SizeBound
from strato.targets.llvm import builders
from strato.targets.llvm.parallel_runtime import WORKSPACE_GIVE, WORKSPACE_TAKE
from strato.targets.llvm.type_conversion import POINTER
from strato.walk import ops_under

STATUS_OK = 0
STATUS_OUT_OF_MEMORY = 1

ALLOCATORS = frozenset({"malloc", "aligned_alloc", WORKSPACE_TAKE})
"""The functions lowered code allocates heap buffers with (the C library's, and the
runtime's workspace, whose buffers `free` releases too)."""

RELEASERS = frozenset({"free", WORKSPACE_GIVE})
"""The functions lowered code hands a heap buffer back with (its first argument)."""


def finalize_entry(
    module: ModuleOp,
    entry: str,
    public_name: str,
    external_failing: Iterable[str] = (),
    size_bounds: Sequence[SizeBound] = (),
    size_sums: Sequence[tuple[int, int, Sequence[tuple[int, int]]]] = (),
) -> None:
    """Give `module` the C ABI described in the module docstring, in place.
    `external_failing` names functions the module only declares (kernels compiled on
    their own: `finalize_kernel`) that return a status: their declarations and calls
    return i32, and a failure of theirs is the entry's. `size_bounds` are the bounds
    of each run-time size the entry takes, in order (none: any size); `size_sums` the
    sizes that must be sums of others: (index, int, (index, times) per term)."""
    functions = _defined_functions(module)
    if entry not in functions:
        raise AssertionError(f"no function @{entry} to finalize")
    if public_name != entry and public_name in functions:
        raise AssertionError(f"@{public_name} is already defined in the module")
    for name, function in functions.items():
        if name != entry:
            function.properties["linkage"] = llvm.LinkageAttr("internal")
    external = set(external_failing)
    _declare_status(module, external)
    failing = _functions_that_can_fail(functions, external)
    for name in failing - external:
        _return_status(functions[name], failing)
    if entry not in failing:
        _return_status(functions[entry], failing)
    _refuse_sizes_out_of_bounds(functions[entry], size_bounds, size_sums)
    functions[entry].properties["sym_name"] = StringAttr(public_name)


def raise_for_status(status: int, symbol: str, sizes: Sequence[int]) -> None:
    """What a call of the entry `symbol` that returned `status` raises (nothing for
    `STATUS_OK`); `sizes` are the run-time sizes it was called with."""
    from strato.runtime.compiled_model import ModelMemoryError
    from strato.runtime.signature import InputMismatchError
    from strato.targets.llvm.sized_entry import STATUS_NO_SUCH_SIZE

    if status == STATUS_OK:
        return
    if status == STATUS_OUT_OF_MEMORY:
        raise ModelMemoryError("out of memory: the model could not allocate its intermediate buffers")
    if status == STATUS_NO_SUCH_SIZE:
        raise InputMismatchError(f"@{symbol} refused the sizes {list(sizes)}: a size out of its bounds")
    raise AssertionError(f"@{symbol} returned the unknown status {status}")


def _refuse_sizes_out_of_bounds(
    function: llvm.FuncOp,
    bounds: Sequence[SizeBound],
    sums: Sequence[tuple[int, int, Sequence[tuple[int, int]]]] = (),
) -> None:
    """An entry compiled once for every size takes the sizes after its buffers (its
    trailing i64 parameters): it returns `STATUS_NO_SUCH_SIZE` for a negative one, or
    one out of its `bounds` (less than the least, more than the most, or not a
    multiple of the multiple, in order), or one other than the sum of others it must be
    (`sums`: its index, an int and the indices and times of the sizes summed), before
    touching a buffer, as the entry of several compiled sizes does for a size it does
    not hold."""
    from strato.targets.llvm.sized_entry import STATUS_NO_SUCH_SIZE

    entry = function.body.blocks[0]
    sizes: list[SSAValue] = []
    for arg in reversed(entry.args):
        if arg.type != i64:
            break
        sizes.insert(0, arg)
    if not sizes:
        return
    rest = Block()
    for op in list(entry.ops):
        op.detach()
        rest.add_op(op)
    refused = Block()
    status = builders.constant(STATUS_NO_SUCH_SIZE, i32)
    refused.add_ops([status, builders.return_(status.result)])
    checks: list[Operation] = []
    out_of_bounds: SSAValue | None = None
    padded = [*bounds, *[SizeBound()] * (len(sizes) - len(bounds))]
    for size, bound in zip(sizes, padded, strict=True):
        tests = [("slt", max(bound.least, 0))] + ([("sgt", bound.most)] if bound.most is not None else [])
        for predicate, limit in tests:
            constant = builders.constant(limit, i64)
            outside = builders.icmp(predicate, size, constant.results[0])
            checks += [constant, outside]
            if out_of_bounds is not None:
                checks.append(builders.int_binary(llvm.OrOp, out_of_bounds, outside.results[0]))
            out_of_bounds = checks[-1].results[0]
        if bound.multiple > 1:
            # (the size is not negative here, or the entry refuses it anyway)
            multiple, zero = builders.constant(bound.multiple, i64), builders.constant(0, i64)
            left = builders.int_binary(llvm.SRemOp, size, multiple.results[0])
            outside = builders.icmp("ne", left.results[0], zero.results[0])
            combined = builders.int_binary(llvm.OrOp, out_of_bounds, outside.results[0])
            checks += [multiple, zero, left, outside, combined]
            out_of_bounds = combined.results[0]
    for k, constant, terms in sums:
        value = builders.constant(constant, i64)
        checks.append(value)
        for j, count in terms:
            factor = builders.constant(count, i64)
            scaled = builders.int_binary(llvm.MulOp, sizes[j], factor.results[0])
            added = builders.int_binary(llvm.AddOp, value.results[0], scaled.results[0])
            checks += [factor, scaled, added]
            value = added
        differs = builders.icmp("ne", sizes[k], value.results[0])
        combined = builders.int_binary(llvm.OrOp, out_of_bounds, differs.results[0])
        checks += [differs, combined]
        out_of_bounds = combined.results[0]
    assert out_of_bounds is not None
    entry.add_ops([*checks, builders.cond_branch(out_of_bounds, refused, [], rest, [])])
    function.body.insert_block_after(rest, entry)
    function.body.add_block(refused)


def finalize_kernel(module: ModuleOp, kernel: str) -> bool:
    """The ABI of a kernel compiled on its own, in place: the functions of `module` other
    than `kernel` (its outlined parallel bodies and tasks) become internal, and the kernel
    returns a status, checking its allocations, when it (or one it calls) allocates on
    the heap; whether it does (its callers then check the status: `finalize_entry`'s
    `external_failing`)."""
    functions = _defined_functions(module)
    if kernel not in functions:
        raise AssertionError(f"no function @{kernel} to finalize")
    for name, function in functions.items():
        if name != kernel:
            function.properties["linkage"] = llvm.LinkageAttr("internal")
    failing = _functions_that_can_fail(functions)
    for name in failing:
        _return_status(functions[name], failing)
    return kernel in failing


def _declare_status(module: ModuleOp, names: set[str]) -> None:
    """The declarations of `names` in `module` return an i32 status."""
    for op in module.ops:
        if isinstance(op, llvm.FuncOp) and not op.body.blocks and op.sym_name.data in names:
            fn_type = op.function_type
            op.properties["function_type"] = builders.function_type(fn_type.inputs.data, i32)


def _defined_functions(module: ModuleOp) -> dict[str, llvm.FuncOp]:
    return {
        op.sym_name.data: op
        for op in module.ops
        if isinstance(op, llvm.FuncOp) and op.body.blocks
    }


def _callee(op: Operation) -> str | None:
    if type(op) is llvm.CallOp:
        callee = op.properties.get("callee")
        if callee is not None:
            return callee.root_reference.data
    return None


def _functions_that_can_fail(
    functions: dict[str, llvm.FuncOp], external: set[str] = frozenset()
) -> set[str]:
    """Functions that allocate, or call (transitively) one that does or one of the
    `external` functions that return a status; the `external` ones included."""
    calls = {
        name: {_callee(op) for op in ops_under(function)} - {None}
        for name, function in functions.items()
    }
    failing = {name for name, callees in calls.items() if callees & (ALLOCATORS | external)}
    failing |= external
    changed = True
    while changed:
        changed = False
        for name, callees in calls.items():
            if name not in failing and callees & failing:
                failing.add(name)
                changed = True
    return failing


def _ops_calling(function: llvm.FuncOp, names: Iterable[str]) -> list[llvm.CallOp]:
    wanted = set(names)
    return [op for op in ops_under(function) if _callee(op) in wanted]  # type: ignore[misc]


def _return_status(function: llvm.FuncOp, failing: set[str]) -> None:
    """Make `function` return an i32 status, checking its allocations and the status of
    the failing functions it calls."""
    fn_type = function.function_type
    if not isinstance(fn_type.output, llvm.LLVMVoidType):
        raise AssertionError(f"@{function.sym_name.data} already returns {fn_type.output}")
    function.properties["function_type"] = builders.function_type(fn_type.inputs.data, i32)
    body = function.body
    entry = body.blocks[0]
    failure = Block(arg_types=[i32])
    failure.args[0].name_hint = "status"
    failure.name_hint = "failure"

    for op in ops_under(function):
        if isinstance(op, llvm.ReturnOp):
            ok = builders.constant(STATUS_OK, i32)
            op.parent_block().insert_ops_before([ok, builders.return_(ok.result)], op)
            op.detach()
            op.erase()

    slots = _allocation_slots(function, entry)
    for call in _ops_calling(function, ALLOCATORS):
        null = llvm.ZeroOp(result_types=[POINTER])
        failed = builders.icmp("eq", call.results[0], null.results[0])
        status = builders.constant(STATUS_OUT_OF_MEMORY, i32)
        _branch_on_failure(call, [null, failed, status], failed.results[0], status.result, failure)
    for call in _ops_calling(function, failing):
        checked = builders.call(_callee(call), list(call.args), i32)
        call.parent_block().insert_op_before(checked, call)
        call.detach()
        call.erase()
        zero = builders.constant(STATUS_OK, i32)
        failed = builders.icmp("ne", checked.results[0], zero.result)
        _branch_on_failure(checked, [zero, failed], failed.results[0], checked.results[0], failure)

    if not failure.uses:
        return  # nothing to check: the function always returns STATUS_OK
    for slot in slots:
        pointer = builders.load(slot, POINTER)
        failure.add_ops([pointer, builders.call("free", [pointer.results[0]], None)])
    failure.add_op(builders.return_(failure.args[0]))
    body.add_block(failure)


def _allocation_slots(function: llvm.FuncOp, entry: Block) -> list[SSAValue]:
    """One stack slot per allocation site, holding the live buffer or null, so the
    failure block can free what the function holds. Returns no slots (the failure path
    then leaks rather than risk a double free) when some `free` does not take a pointer
    straight from an allocation of this function."""
    allocations = _ops_calling(function, ALLOCATORS)
    if not allocations:
        return []
    frees = _ops_calling(function, RELEASERS)
    if any(not isinstance(f.args[0].owner, llvm.CallOp) or f.args[0].owner not in allocations for f in frees):
        return []
    one = builders.index_constant(1)
    null = llvm.ZeroOp(result_types=[POINTER])
    setup: list[Operation] = [one, null]
    slot_of: dict[Operation, SSAValue] = {}
    for call in allocations:
        slot = builders.alloca(one.result, POINTER, 8)
        setup += [slot, builders.store(null.results[0], slot.results[0])]
        slot_of[call] = slot.results[0]
        call.parent_block().insert_op_after(builders.store(call.results[0], slot.results[0]), call)
    for free in frees:
        cleared = llvm.ZeroOp(result_types=[POINTER])
        free.parent_block().insert_ops_after(
            [cleared, builders.store(cleared.results[0], slot_of[free.args[0].owner])], free
        )
    builders.ensure_declared(function, "free", builders.function_type([POINTER], None))
    if entry.first_op is None:
        entry.add_ops(setup)
    else:
        entry.insert_ops_before(setup, entry.first_op)
    return list(slot_of.values())


def _branch_on_failure(
    anchor: Operation,
    checks: list[Operation],
    failed: SSAValue,
    status: SSAValue,
    failure: Block,
) -> None:
    """After `anchor` (and the slot store that may follow it), run `checks` and branch
    to `failure` with `status` when `failed` holds; the rest of the block continues."""
    block = anchor.parent_block()
    last = anchor
    following = anchor.next_op
    if isinstance(following, llvm.StoreOp) and following.value == anchor.results[0]:
        last = following
    rest = last.next_op
    assert rest is not None, "a call cannot end a block"
    continuation = block.split_before(rest)
    block.add_ops([*checks, builders.cond_branch(failed, failure, [status], continuation, [])])


def batch_symbol(entry_symbol: str) -> str:
    """The name of the entry that runs every sample of a batch: `mlp_run` ->
    `mlp_run_batch`."""
    return entry_symbol.removesuffix("_run") + "_run_batch"


def batch_entry_ir(entry_symbol: str, sample_bytes: tuple[int | None, ...]) -> str:
    """LLVM IR text of `<name>_run_batch(i64 count, ptr buffers...)`, which calls
    `entry_symbol` once per sample, buffer k of sample i at `sample_bytes[k] * i` bytes
    in (None: the buffer itself), and returns the first status that is not `STATUS_OK`
    (`strato.runtime.batched`). It goes in the module that defines the entry."""
    name = batch_symbol(entry_symbol)
    parameters = ", ".join(f"ptr %b{k}" for k in range(len(sample_bytes)))
    lines = [
        f"define i32 @{name}(i64 %count{', ' if parameters else ''}{parameters}) {{",
        "entry:",
        "  br label %loop",
        *sample_loop_ir(entry_symbol, "%count", sample_bytes),
        "}",
        "",
    ]
    return "\n".join(lines)


def sample_loop_ir(
    entry_symbol: str,
    count: str,
    sample_bytes: tuple[int | None, ...],
    *,
    tag: str = "",
    from_block: str = "entry",
) -> list[str]:
    """The blocks of a loop calling `entry_symbol` once per sample, `count` (an i64
    value) times: buffer k (`%b<k>`) of sample i at `sample_bytes[k] * i` bytes in
    (None: the buffer itself). It returns the first status that is not `STATUS_OK`, or
    `STATUS_OK`. Its first block, `loop<tag>`, is entered from `from_block`; `tag` keeps
    the names of several such loops in one function apart."""
    t = tag
    lines = [
        f"loop{t}:",
        f"  %i{t} = phi i64 [ 0, %{from_block} ], [ %next{t}, %next_sample{t} ]",
        f"  %more{t} = icmp slt i64 %i{t}, {count}",
        f"  br i1 %more{t}, label %sample{t}, label %done{t}",
        f"sample{t}:",
    ]
    arguments = []
    for k, size in enumerate(sample_bytes):
        if size is None:
            arguments.append(f"ptr %b{k}")
            continue
        lines.append(f"  %offset{t}_{k} = mul i64 %i{t}, {size}")
        lines.append(f"  %p{t}_{k} = getelementptr i8, ptr %b{k}, i64 %offset{t}_{k}")
        arguments.append(f"ptr %p{t}_{k}")
    lines += [
        f"  %status{t} = call i32 @{entry_symbol}({', '.join(arguments)})",
        f"  %ok{t} = icmp eq i32 %status{t}, {STATUS_OK}",
        f"  br i1 %ok{t}, label %next_sample{t}, label %failed{t}",
        f"next_sample{t}:",
        f"  %next{t} = add i64 %i{t}, 1",
        f"  br label %loop{t}",
        f"failed{t}:",
        f"  ret i32 %status{t}",
        f"done{t}:",
        f"  ret i32 {STATUS_OK}",
    ]
    return lines


__all__ = [
    "ALLOCATORS",
    "STATUS_OK",
    "STATUS_OUT_OF_MEMORY",
    "batch_entry_ir",
    "batch_symbol",
    "finalize_entry",
    "finalize_kernel",
    "sample_loop_ir",
]
