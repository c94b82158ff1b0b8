"""Token insertion and virtual threads on random VTA programs, against program-order semantics.

Random programs of loads, GEMMs (reset and accumulate), ALU ops and stores in random
loops, optionally inside a two-thread virtual-thread loop (each thread stores to its own
part of `out`), go through vta-insert-dependence-tokens and vta-inject-virtual-threads.
The simulator must then run them without a deadlock, a race or a left-over token, under
several module orders, and write what the program-order reference writes.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import IndexType, IntegerAttr, MemRefType, ModuleOp, i8, i32
from xdsl.ir import Block, Region

from strato.dialects import vta
from strato.dialects.loop import ForOp, LoopKind, MemoryScope, ScopeAttr
from strato.targets.vta.interpret import run_vta
from strato.targets.vta.reference import run_reference
from strato.targets.vta.vta_inject_virtual_threads import VtaInjectVirtualThreadsPass
from strato.targets.vta.vta_insert_dependence_tokens import (
    VtaInsertDependenceTokensPass,
)

INP, WGT, ACC = 8, 4, 8  # elements of each buffer slice
X_ELEMS, W_ELEMS, OUT_ELEMS = 16, 4, 32


def _type(n, shape, element, scope=None):
    if scope is None:
        return MemRefType(element, [n, *shape])
    return MemRefType(element, [n, *shape], memory_space=ScopeAttr(scope))


class _Gen:
    def __init__(self, data, threads: int):
        self.data = data
        self.threads = threads

    def draw(self, strategy):
        return self.data.draw(strategy)

    def const(self, block: Block, value: int):
        op = arith.ConstantOp(IntegerAttr(value, IndexType()))
        block.insert_op_before(op, block.last_op) if block.last_op and block.last_op.name == "loop.yield" else block.add_op(op)
        return op.result

    def add(self, block: Block, op):
        last = block.last_op
        if last is not None and last.name == "loop.yield":
            block.insert_op_before(op, last)
        else:
            block.add_op(op)
        return op

    def statements(self, block: Block, env, depth: int) -> None:
        for _ in range(self.draw(st.integers(1, 4))):
            kind = self.draw(st.sampled_from(["li", "lw", "gemm", "reset", "alu", "store", "loop"]))
            if kind == "loop" and depth < 2:
                loop, body = ForOp.build(0, self.draw(st.integers(1, 3)))
                self.add(block, loop)
                self.statements(body, env, depth + 1)
            else:
                self.task(block, env, kind if kind != "loop" else "gemm")

    def task(self, block: Block, env, kind: str) -> None:
        x, w, out, inp, wgt, acc, thread_base = env
        if kind == "li":
            pad = self.draw(st.sampled_from([(0, 0, 0, 0), (1, 0, 1, 0), (0, 1, 0, 1)]))
            cols = self.draw(st.integers(1, INP // (pad[0] + 1 + pad[1]) - pad[2] - pad[3]))
            used = (pad[0] + 1 + pad[1]) * (pad[2] + cols + pad[3])
            sram = self.draw(st.integers(0, INP - used))
            dram = self.draw(st.integers(0, X_ELEMS - cols))
            self.add(block, vta.LoadOp(x, self.const(block, dram), inp, self.const(block, sram), 1, cols, cols, pad))
        elif kind == "lw":
            sram = self.draw(st.integers(0, WGT - 1))
            dram = self.draw(st.integers(0, W_ELEMS - 1))
            self.add(block, vta.LoadOp(w, self.const(block, dram), wgt, self.const(block, sram), 1, 1, 1))
        elif kind in ("gemm", "reset"):
            n = self.draw(st.integers(1, 4))
            d = self.draw(st.integers(0, ACC - n))
            s = self.draw(st.integers(0, INP - n))
            k = self.draw(st.integers(0, WGT - 1))
            self.add(block, vta.GemmOp(acc, inp, wgt, [[n, 1, 1, 0]], [[d, s, k]], reset=kind == "reset"))
        elif kind == "alu":
            n = self.draw(st.integers(1, 4))
            d = self.draw(st.integers(0, ACC - n))
            opcode, imm = self.draw(st.sampled_from([("shr", 2), ("add", -3), ("max", -50), ("min", 60)]))
            self.add(block, vta.AluOp(opcode, acc, [[n, 1, 1]], [[d, d]], imm))
        else:
            cols = self.draw(st.integers(1, 4))
            sram = self.draw(st.integers(0, ACC - cols))
            dram = self.draw(st.integers(0, 16 - cols))
            index = self.add(block, arith.AddiOp(thread_base, self.const(block, dram))).result
            self.add(block, vta.StoreOp(acc, self.const(block, sram), out, index, 1, cols, cols))


def random_program(data) -> ModuleOp:
    threads = data.draw(st.sampled_from([1, 2]))
    gen = _Gen(data, threads)
    types = [_type(X_ELEMS, (1, 16), i8), _type(W_ELEMS, (16, 16), i8), _type(OUT_ELEMS, (1, 16), i8)]
    entry = Block(arg_types=types)
    x, w, out = entry.args
    body = entry
    thread = None
    if threads == 2:
        loop, body = ForOp.build(0, 2, kind=LoopKind.VIRTUAL_THREAD)
        entry.add_op(loop)
        thread = body.args[0]
    inp = gen.add(body, vta.BufferOp(0, _type(INP, (1, 16), i8, MemoryScope.VTA_INP))).result
    wgt = gen.add(body, vta.BufferOp(0, _type(WGT, (16, 16), i8, MemoryScope.VTA_WGT))).result
    acc = gen.add(body, vta.BufferOp(0, _type(ACC, (1, 16), i32, MemoryScope.VTA_ACC))).result
    if thread is None:
        thread_base = gen.const(body, 0)
    else:  # each thread stores to its own 16 elements of out
        thread_base = gen.add(body, arith.MuliOp(thread, gen.const(body, 16))).result
    gen.statements(body, (x, w, out, inp, wgt, acc, thread_base), 0)
    # at least one store, so every program has an observable result
    gen.task(body, (x, w, out, inp, wgt, acc, thread_base), "store")
    entry.add_op(func.ReturnOp())
    module = ModuleOp([func.FuncOp("program", (types, []), Region(entry))])
    module.verify()
    return module


@settings(max_examples=40, deadline=None)
@given(data=st.data(), values=st.integers(0, 2**16))
def test_tokens_and_threads_keep_program_order_results(data, values):
    module = random_program(data)
    function = next(iter(module.ops))
    rng = np.random.default_rng(values)
    arrays = [
        rng.integers(-128, 128, (X_ELEMS, 1, 16), dtype=np.int8),
        rng.integers(-8, 8, (W_ELEMS, 16, 16), dtype=np.int8),
        rng.integers(-128, 128, (OUT_ELEMS, 1, 16), dtype=np.int8),
    ]
    want = run_reference(function, arrays)[2]
    VtaInsertDependenceTokensPass().apply(Context(), module)
    VtaInjectVirtualThreadsPass().apply(Context(), module)
    module.verify()
    for seed in (None, 0, 1, 2):
        outputs, _, _ = run_vta(function, arrays, seed=seed)
        np.testing.assert_array_equal(outputs[2], want)
