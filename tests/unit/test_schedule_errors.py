"""Every precondition of every primitive: a ScheduleError in the user's terms, and the
kernel and the trace left as they were."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from strato.context import make_context
from strato.pipeline import run_pipeline
from strato.schedule import Schedule, ScheduleError, Step, Trace

PROGRAM = """
te.primitive @k {
  %x = te.placeholder "x" : tensor<4x3xf32>
  %w = te.placeholder "w" : tensor<6x3xf32>
  %d = te.reduce "dense" sum (%i, %j) over (%k : 3) init 0.0 : tensor<4x6xf32> {
    %a = te.read %x[%i, %k] : tensor<4x3xf32>
    %b = te.read %w[%j, %k] : tensor<6x3xf32>
    %p = arith.mulf %a, %b : f32
    te.yield %p : f32
  }
  %t = te.compute "tanh" (%i, %j) : tensor<4x6xf32> {
    %v = te.read %d[%i, %j] : tensor<4x6xf32>
    %m = math.tanh %v : f32
    te.yield %m : f32
  }
  %s = te.compute "shift" (%i, %j) : tensor<4x6xf32> {
    %v = te.read %t[%i, %j] : tensor<4x6xf32>
    %c5 = arith.constant 5 : index
    %jr = arith.subi %c5, %j : index
    %u = te.read %t[%i, %jr] : tensor<4x6xf32>
    %m = arith.addf %v, %u : f32
    te.yield %m : f32
  }
  %h = te.compute "half" (%i, %j) : tensor<2x6xf32> {
    %v = te.read %s[%i, %j] : tensor<4x6xf32>
    te.yield %v : f32
  }
  %r = te.compute "relu" (%i, %j) : tensor<2x6xf32> {
    %v = te.read %h[%i, %j] : tensor<2x6xf32>
    %q = te.read %x[%i, %i] : tensor<4x3xf32>
    %m = arith.maximumf %v, %q : f32
    te.yield %m : f32
  }
  %o = te.reduce "rowsum" sum (%i) over (%j : 6) init 0.0 : tensor<2xf32> {
    %v = te.read %r[%i, %j] : tensor<2x6xf32>
    te.yield %v : f32
  }
  %a1 = te.compute "a1" (%i) : tensor<3xf32> {
    %v = te.read %x[%i, %i] : tensor<4x3xf32>
    te.yield %v : f32
  }
  %a2 = te.compute "a2" (%i) : tensor<3xf32> {
    %v = te.read %a1[%i] : tensor<3xf32>
    te.yield %v : f32
  }
  %a3 = te.compute "a3" (%i) : tensor<3xf32> {
    %v = te.read %a1[%i] : tensor<3xf32>
    te.yield %v : f32
  }
  %c = te.compute "cube" (%i, %j, %l) : tensor<3x2x3xf32> {
    %v = te.read %x[%i, %l] : tensor<4x3xf32>
    te.yield %v : f32
  }
  %cs = te.reduce "cubesum" sum () over (%i : 3, %j : 2, %l : 3) init 0.0 : tensor<f32> {
    %v = te.read %c[%i, %j, %l] : tensor<3x2x3xf32>
    te.yield %v : f32
  }
  %pr = te.compute "pair" (%i) : tensor<3xf32> {
    %u = te.read %a2[%i] : tensor<3xf32>
    %v = te.read %a3[%i] : tensor<3xf32>
    %m = arith.addf %u, %v : f32
    te.yield %m : f32
  }
  te.output %o, %t, %a2, %a3, %cs, %pr : tensor<2xf32>, tensor<4x6xf32>, tensor<3xf32>, tensor<3xf32>, tensor<f32>, tensor<3xf32>
}
"""


def lowered() -> ModuleOp:
    module = Parser(make_context(), PROGRAM).parse_module()
    run_pipeline(make_context(), module, "convert-te-to-loops")
    return module


def loop(sch: Schedule, stage: str, axis: str):
    return sch.get_loop(stage, axis)


def stage(sch: Schedule, name: str):
    return sch.get_stage(name)


Case = tuple[str, Callable[[Schedule], object], str]

CASES: list[Case] = [
    # handles
    ("no stage", lambda s: s.get_stage("conv"), "no stage named 'conv'"),
    ("no loop", lambda s: s.get_loop("dense", "z"), "stage dense has no loop named z"),
    ("not a loop", lambda s: s.split(stage(s, "dense"), [None, 2]), "expected a loop handle"),
    # split
    ("split gone", lambda s: (lambda i: (s.split(i, [None, 2]), s.split(i, [2, 2])))(loop(s, "dense", "i"))[-1],
        "loop i of stage dense no longer exists"),
    ("split one factor", lambda s: s.split(loop(s, "dense", "i"), [4]), "give at least two factors"),
    ("split two None", lambda s: s.split(loop(s, "dense", "i"), [None, None]), "at most one factor may be None"),
    ("split zero", lambda s: s.split(loop(s, "dense", "i"), [None, 0]), "factors must be positive integers"),
    ("split outer", lambda s: s.split(loop(s, "dense", "i"), [3, 2]), r"need an outermost factor of 2"),
    ("split tail", lambda s: s.split(loop(s, "dense", "i"), [None, 3], tail="wrap"), "tail must be one of guard, pad"),
    ("pad reduction", lambda s: s.split(loop(s, "dense", "k"), [None, 2], tail="pad"), "k of stage dense is a reduction loop; padding"),
    ("pad argument", lambda s: s.split(loop(s, "dense", "i"), [None, 3], tail="pad"), "indexes buffer x with i in a way padding cannot extend"),
    ("pad attached", lambda s: (s.compute_at(stage(s, "half"), loop(s, "relu", "i")),
        s.split(loop(s, "half", "j"), [None, 4], tail="pad"))[-1], "loop j of stage half cannot be padded"),
    # reorder
    ("reorder repeat", lambda s: s.reorder(loop(s, "dense", "i"), loop(s, "dense", "i")), "repeat a loop"),
    ("reorder stages", lambda s: s.reorder(loop(s, "dense", "i"), loop(s, "tanh", "j")), "the loops belong to stages dense, tanh"),
    ("reorder init", lambda s: (s.decompose_reduction(stage(s, "dense"), loop(s, "dense", "j")),
        s.reorder(loop(s, "dense", "k"), loop(s, "dense", "j")))[-1], "reduction loop k of stage dense would enclose its init"),
    ("reorder reverse attached", lambda s: (s.reverse_compute_at(stage(s, "tanh"), loop(s, "dense", "j")),
        s.reorder(loop(s, "dense", "k"), loop(s, "dense", "j")))[-1],
        "stage tanh is computed after loop j of stage dense, which would run inside reduction loop k"),
    # fuse
    ("fuse one", lambda s: s.fuse(loop(s, "dense", "i")), "give at least two loops"),
    ("fuse apart", lambda s: s.fuse(loop(s, "dense", "i"), loop(s, "dense", "k")), "are not consecutive"),
    ("fuse order", lambda s: s.fuse(loop(s, "dense", "j"), loop(s, "dense", "i")), "are not consecutive"),
    ("fuse mixed", lambda s: s.fuse(loop(s, "dense", "j"), loop(s, "dense", "k")), "mix reduction and data-parallel loops"),
    ("fuse attached", lambda s: (s.compute_at(stage(s, "half"), loop(s, "relu", "j")),
        s.fuse(loop(s, "relu", "i"), loop(s, "relu", "j")))[-1], "stage half is computed at loop j of stage relu"),
    ("fuse init", lambda s: (s.decompose_reduction(stage(s, "dense"), loop(s, "dense", "j")),
        s.fuse(loop(s, "dense", "i"), loop(s, "dense", "j")))[-1], "decomposed at loop j, inside the fused loops"),
    # loop kinds
    ("vectorize outer", lambda s: s.vectorize(loop(s, "tanh", "i")), "loop i of stage tanh is not its innermost loop"),
    ("vectorize reduction", lambda s: s.vectorize(loop(s, "dense", "k")), "loop k of stage dense is a reduction loop"),
    ("vectorize guarded", lambda s: s.vectorize(s.split(loop(s, "tanh", "j"), [None, 4])[1]), "is not straight-line"),
    ("vectorize attached", lambda s: (s.compute_at(stage(s, "half"), loop(s, "relu", "j")),
        s.vectorize(loop(s, "relu", "j")))[-1], "stage half is computed at loop j of stage relu"),
    ("parallel reduction", lambda s: s.parallel(loop(s, "dense", "k")), "cannot parallel: loop k of stage dense is a reduction loop"),
    ("bind reduction", lambda s: s.bind(loop(s, "dense", "k"), "vthread"), "cannot bind: loop k of stage dense is a reduction loop"),
    ("bind thread", lambda s: s.bind(loop(s, "dense", "i"), "threadIdx.x"), "unknown thread 'threadIdx.x'"),
    ("annotate reserved", lambda s: s.annotate(loop(s, "dense", "i"), "stage", "x"), "'stage' is not an annotation name"),
    ("annotate value", lambda s: s.annotate(stage(s, "dense"), "k", [1]), "must be a string, number or boolean"),
    # compute_at
    ("compute_at reduction of reduction", lambda s: s.compute_at(stage(s, "dense"), loop(s, "rowsum", "j")),
        "cannot compute_at: loop j of stage rowsum is a reduction loop of the consumer, and stage dense is a reduction"),
    ("compute_at output", lambda s: s.compute_at(stage(s, "tanh"), loop(s, "shift", "i")), "writes the kernel's output t"),
    ("compute_at itself", lambda s: s.compute_at(stage(s, "half"), loop(s, "half", "i")), "cannot be computed inside itself"),
    ("compute_at reader outside", lambda s: s.compute_at(stage(s, "dense"), loop(s, "half", "i")),
        "stage tanh also reads stage dense outside loop i of stage half"),
    ("compute_at consumer", lambda s: s.compute_at(stage(s, "relu"), loop(s, "half", "i")), "is not a producer of stage half"),
    ("compute_at cycle", lambda s: (s.compute_at(stage(s, "half"), loop(s, "relu", "i")),
        s.compute_at(stage(s, "relu"), loop(s, "half", "i")))[-1], "stage half is computed inside stage relu"),
    # reverse_compute_at
    ("reverse reduction", lambda s: s.reverse_compute_at(stage(s, "tanh"), loop(s, "dense", "k")),
        "loop k of stage dense is a reduction loop of the producer"),
    ("reverse unrelated", lambda s: s.reverse_compute_at(stage(s, "relu"), loop(s, "tanh", "i")), "stage relu does not read stage tanh"),
    ("reverse index", lambda s: s.reverse_compute_at(stage(s, "shift"), loop(s, "tanh", "i")),
        "reads stage tanh at indices that are not its own data-parallel loop variables"),
    ("reverse attached", lambda s: (s.compute_at(stage(s, "half"), loop(s, "relu", "j")),
        s.reverse_compute_at(stage(s, "relu"), loop(s, "half", "j")))[-1], "stage half is computed inside stage relu"),
    ("reverse other producer", lambda s: s.reverse_compute_at(stage(s, "pair"), loop(s, "a2", "i")),
        "stage pair also reads stage a3, which is not computed before stage a2"),
    ("reverse order", lambda s: s.reverse_compute_at(stage(s, "dense"), loop(s, "tanh", "i")), "stage dense does not read stage tanh"),
    # inline
    ("inline reduction", lambda s: s.compute_inline(stage(s, "dense")), "cannot compute_inline: stage dense is a reduction"),
    ("inline output", lambda s: s.compute_inline(stage(s, "tanh")), "writes the kernel's output t"),
    ("inline attached", lambda s: (s.compute_at(stage(s, "shift"), loop(s, "half", "i")), s.compute_inline(stage(s, "half")))[-1],
        "stage shift is computed at a loop of stage half"),
    ("reverse inline reduction", lambda s: s.reverse_compute_inline(stage(s, "rowsum")), "stage rowsum is a reduction"),
    ("reverse inline producers", lambda s: s.reverse_compute_inline(stage(s, "shift")), "must read exactly one stage of the kernel that writes a local buffer, it reads 0"),
    ("reverse inline reduction producer", lambda s: s.reverse_compute_inline(stage(s, "tanh")), "its producer dense is a reduction"),
    ("reverse inline part", lambda s: s.reverse_compute_inline(stage(s, "half")), "stage half reads only part of stage shift"),
    ("reverse inline other reader", lambda s: s.reverse_compute_inline(stage(s, "a2")), "stage a1 is also read by a3"),
    # caches
    ("cache scope", lambda s: s.cache_read(stage(s, "dense"), "x", "shared"), "unknown memory scope 'shared'"),
    ("cache global", lambda s: s.cache_write(stage(s, "dense"), "global"), "not global"),
    ("cache_read name", lambda s: s.cache_read(stage(s, "dense"), "y"), "stage dense does not read a buffer named 'y' \\(it reads x, w\\)"),
    ("cache_read index", lambda s: s.cache_read(stage(s, "dense"), 2), "stage dense reads 2 buffers"),
    ("cache_read attached", lambda s: (s.compute_at(stage(s, "half"), loop(s, "relu", "i")),
        s.cache_read(stage(s, "relu"), "h"))[-1], "buffer h is computed by stage half inside stage relu"),
    ("cache_read reverse attached", lambda s: (s.reverse_compute_at(stage(s, "relu"), loop(s, "half", "i")),
        s.cache_read(stage(s, "relu"), "h"))[-1], "stage relu is computed after a loop of stage half"),
    ("cache_write scheduled", lambda s: (s.split(loop(s, "dense", "i"), [None, 2]), s.cache_write(stage(s, "dense")))[-1],
        "stage dense is already scheduled; cache_write it before"),
    ("cache_write attached", lambda s: (s.compute_at(stage(s, "half"), loop(s, "relu", "i")), s.cache_write(stage(s, "relu")))[-1],
        "stage half is computed at a loop of stage relu"),
    # decompose_reduction
    ("decompose compute", lambda s: s.decompose_reduction(stage(s, "tanh"), loop(s, "tanh", "i")), "stage tanh is not a reduction"),
    ("decompose inside", lambda s: (s.reorder(loop(s, "dense", "k"), loop(s, "dense", "j")),
        s.decompose_reduction(stage(s, "dense"), loop(s, "dense", "j")))[-1], "loop k of stage dense is a reduction loop outside loop j"),
    ("decompose other stage", lambda s: s.decompose_reduction(stage(s, "dense"), loop(s, "tanh", "i")), "belongs to stage tanh, not dense"),
    # storage_align
    ("align output", lambda s: s.storage_align(stage(s, "tanh"), 0, 4, 1), "writes the kernel's buffer t, whose layout is fixed"),
    ("align axis", lambda s: s.storage_align(stage(s, "dense"), 1, 4, 1), "axis 1 of buffer d \\(rank 2\\) has no stride to pad"),
    ("align offset", lambda s: s.storage_align(stage(s, "dense"), 0, 4, 4), "need factor > 0 and 0 <= offset < factor"),
    ("align unreachable", lambda s: s.storage_align(stage(s, "cube"), 0, 4, 1),
        "no size of the last dimension of buffer c makes the stride of axis 0 1 modulo 4"),
    # transform_layout
    ("layout argument", lambda s: s.transform_layout(stage(s, "dense"), "i, j -> j, i", buffer="x"), "buffer x is an argument of the kernel"),
    ("layout twice", lambda s: (s.transform_layout(stage(s, "dense"), "i, j -> j, i"),
        s.transform_layout(stage(s, "dense"), "i, j -> j, i"))[-1], "buffer d already has a layout"),
    ("layout arrow", lambda s: s.transform_layout(stage(s, "dense"), "i, j"), "has no '->'"),
    ("layout rank", lambda s: s.transform_layout(stage(s, "dense"), "i -> i"), "names 1 dimensions, the buffer has 2"),
    ("layout one-to-one", lambda s: s.transform_layout(stage(s, "dense"), "i, j -> i, i"), "dimension i must appear once"),
    ("layout term", lambda s: s.transform_layout(stage(s, "dense"), "i, j -> i, j * 2"), "cannot read 'j \\* 2'"),
    ("layout divisor", lambda s: s.transform_layout(stage(s, "dense"), "i, j -> i, j // 0, j % 0"), "divides by 0"),
    # tensorize
    ("tensorize unknown intrinsic", lambda s: s.tensorize(loop(s, "dense", "i"), "no.such.intrinsic"), "no.such.intrinsic|unknown intrinsic|no intrinsic"),
]


@pytest.mark.parametrize("name,schedule,message", CASES, ids=[c[0] for c in CASES])
def test_precondition(name: str, schedule: Callable[[Schedule], object], message: str):
    module = lowered()
    sch = Schedule(module, kernel="k")
    # apply the setup steps (all but the failing one) and remember the state before it
    with pytest.raises(ScheduleError) as info:
        schedule(_Recorder(sch))
    assert re.search(message, info.value.message), info.value.message
    assert "\n" not in info.value.message
    # the failing primitive left the kernel as the last successful step made it
    replayed = lowered()
    Trace.from_json(sch.trace.to_json()).replay(Schedule(replayed, kernel="k"))
    assert str(replayed) == str(module)


class _Recorder:
    """Passes calls through to a Schedule (kept as a seam for the checks above)."""

    def __init__(self, sch: Schedule):
        self._sch = sch

    def __getattr__(self, name: str):
        return getattr(self._sch, name)


def test_schedule_requires_a_canonical_kernel():
    module = lowered()
    sch = Schedule(module, kernel="k")
    sch.split(sch.get_loop("dense", "i"), [None, 2])
    with pytest.raises(ScheduleError, match="stage dense is not a canonical loop nest"):
        Schedule(module, kernel="k")


def test_schedule_names_its_kernel():
    module = lowered()
    with pytest.raises(ScheduleError, match="no kernel named @q in the module \\(kernels: k\\)"):
        Schedule(module, kernel="q")


@pytest.mark.parametrize(
    "text,message",
    [
        ("{", "a trace is not valid JSON"),
        ('{"steps": []}', "a trace is a JSON object with a 'kernel' name"),
        ('{"version": 9, "kernel": "k", "steps": []}', "trace version 9 is not supported"),
        ('{"kernel": "k", "steps": [{"args": []}]}', "a trace step needs a 'primitive' name"),
        ('{"kernel": "k", "steps": [{"primitive": "split", "args": {}}]}', "'args' must be a list"),
    ],
)
def test_malformed_traces(text: str, message: str):
    with pytest.raises(ScheduleError, match=message):
        Trace.from_json(text)


@pytest.mark.parametrize(
    "step,message",
    [
        (Step("rfactor", []), "unknown schedule primitive 'rfactor'"),
        (Step("split", [{"stage": "dense", "axis": "i"}]), "cannot read handle"),
        (Step("split", [{"stage": "dense", "loop": "i"}], {"ways": 2}), "bad arguments for split"),
        (Step("split", [{"stage": "dense", "loop": "q"}], {"factors": [None, 2]}), "stage dense has no loop named q"),
    ],
)
def test_bad_trace_steps(step: Step, message: str):
    module = lowered()
    sch = Schedule(module, kernel="k")
    before = str(module)
    with pytest.raises(ScheduleError, match=message):
        sch.apply_step(step)
    assert str(module) == before and not sch.trace.steps
