"""Compile LLVM IR to host machine code with llvmlite, and call it on numpy arrays.

    jit = JitModule(llvm_module)              # llvm-dialect ModuleOp, or LLVM IR text
    relu = jit.function("relu")
    relu(x, out)                              # contiguous numpy arrays, by pointer

The IR is parsed, verified, optimized with LLVM's default pipeline for the host CPU
(its name and features, so vector units are used) and compiled in memory by MCJIT. No
C compiler is involved; `malloc`, `free` and libm resolve from the C libraries loaded
into the process. `compile_object` writes the same code to an object file.

A model's weights are not in its IR: they are external constant symbols whose bytes live
in a `WeightBlob` (`strato.targets.llvm.weights`). `JitModule(..., weights=blob)` and
`ObjectModule(..., weights=blob)` bind each symbol to its address in the blob, in that
engine only (MCJIT's global mapping, not the process-wide symbol table), so two models
with the same symbol names load side by side; `compile_object(..., weights=blob)`
defines the symbols inside the object file.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import math
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from xdsl.dialects import llvm as llvm_dialect
from xdsl.dialects.builtin import (
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    ModuleOp,
)
from xdsl.ir import Attribute

from strato.diagnostics import StratoError
from strato.dialects.tensor_types import shares_storage
from strato.runtime.signature import data_address
from strato.runtime.weight_blob import ALIGNMENT, EMPTY, WeightBlob
from strato.targets.llvm.func_to_llvm import MEMREF_TYPE_ARG_ATTR
from strato.targets.llvm.host import HostTarget, host_target, runs_here, target_machine
from strato.targets.llvm.ir_printer import print_llvm_ir
from strato.targets.llvm.model import CompiledObject, MachineCode
from strato.targets.llvm.type_conversion import memref_size_in_bytes

LLVMSource = str | ModuleOp | ir.Module
"""LLVM IR text, an llvm-dialect module, or an llvmlite IR module."""

_SCALAR_CTYPES: dict[str, type] = {
    "float": ctypes.c_float,
    "double": ctypes.c_double,
    "i1": ctypes.c_bool,
    "i8": ctypes.c_int8,
    "i16": ctypes.c_int16,
    "i32": ctypes.c_int32,
    "i64": ctypes.c_int64,
    "ptr": ctypes.c_void_p,
}


class JitError(StratoError):
    """LLVM IR that does not parse or verify, or a symbol the JIT cannot resolve."""


_PREPARING: threading.Thread | None = None
_PREPARING_LOCK = threading.Lock()


def prepare_c_runtime() -> None:
    """Start `_load_c_runtime` in a thread of its own, once per process. It is mostly
    LLVM compiling the parallel runtime, which releases the GIL: it then costs a compile
    nothing, done beside the import and the graph passes on a core they leave idle. The
    first `_load_c_runtime` after it waits for it, and so does a fork."""
    global _PREPARING
    with _PREPARING_LOCK:
        if _PREPARING is None and not _load_c_runtime_once.cache_info().currsize:
            _PREPARING = threading.Thread(
                target=_prepare, name="strato-prepare-runtime", daemon=True
            )
            _PREPARING.start()


def _prepare() -> None:
    # a failure is raised where it matters: by the next _load_c_runtime, in its caller
    with contextlib.suppress(Exception):
        _load_c_runtime_once()


def _wait_prepared() -> None:
    """Wait for the thread `prepare_c_runtime` started, if any (not from itself)."""
    preparing = _PREPARING
    if preparing is not None and preparing is not threading.current_thread():
        preparing.join()


# a process forked while LLVM compiles in that thread could inherit LLVM's locks held
os.register_at_fork(before=_wait_prepared)


def _load_c_runtime() -> None:
    """`_load_c_runtime_once`, once the thread `prepare_c_runtime` started is done."""
    _wait_prepared()
    _load_c_runtime_once()


@cache
def _load_c_runtime_once() -> None:
    """Make the C library and libm visible to the JIT's symbol resolution (they are
    in the process already; this makes the lookup independent of how Python was
    linked)."""
    host_target()
    for name in ("c", "m"):
        path = ctypes.util.find_library(name)
        if path is not None:
            llvm.load_library_permanently(path)
    # the thread pool of parallel loops, shared by every module (and object) of the process
    from strato.targets.llvm.parallel_runtime import install_parallel_runtime

    install_parallel_runtime()


def _ir_text(source: LLVMSource, machine: HostTarget | None = None) -> str:
    if isinstance(source, ModuleOp):
        return print_llvm_ir(source, machine)
    return str(source)


def _parse(text: str) -> llvm.ModuleRef:
    try:
        module = llvm.parse_assembly(text)
        module.verify()
    except RuntimeError as err:
        raise JitError(f"invalid LLVM IR: {str(err).strip()}") from err
    return module


def optimize(
    module: llvm.ModuleRef, machine: llvm.TargetMachine, opt_level: int
) -> None:
    """Run LLVM's default module pipeline at `opt_level` (0-3), vectorizers included
    from O2, tuned for `machine`."""
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    tuning = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    tuning.loop_vectorization = opt_level >= 2
    tuning.slp_vectorization = opt_level >= 2
    builder = llvm.create_pass_builder(machine, tuning)
    builder.getModulePassManager().run(module, builder)


def _numpy_dtype(element: Attribute) -> np.dtype | None:
    if isinstance(element, Float32Type):
        return np.dtype(np.float32)
    if isinstance(element, Float64Type):
        return np.dtype(np.float64)
    if isinstance(element, Float16Type):
        return np.dtype(np.float16)
    if isinstance(element, IndexType):
        return np.dtype(np.int64)
    if isinstance(element, IntegerType):
        width = element.width.data
        return {1: np.dtype(np.bool_), 8: np.dtype(np.int8), 16: np.dtype(np.int16),
                32: np.dtype(np.int32), 64: np.dtype(np.int64)}.get(width)  # fmt: skip
    return None


@dataclass(frozen=True)
class BufferSpec:
    """What a pointer argument stands for: a memref type, and whether it is written."""

    type: MemRefType
    is_output: bool

    def check(self, function: str, position: int, array: np.ndarray) -> None:
        """Raise `ValueError` unless `array` is a buffer of this type. Buffers hold
        signless storage types, so an array of a dtype they hold bit for bit is accepted
        too (uint8 for an i8 buffer, bfloat16 for an i16 one: `shares_storage`)."""
        where = f"{function}: argument {position}"
        dtype = _numpy_dtype(self.type.element_type)
        if dtype is not None and not shares_storage(array.dtype, dtype):
            raise ValueError(
                f"{where} must have dtype {dtype} for {self.type}, got {array.dtype}"
            )
        shape = self.type.get_shape()
        if any(n < 0 for n in shape):
            # a run-time size: whole rows of the static dimensions after it
            row = math.prod(shape[1:]) * array.itemsize
            if row and array.nbytes % row:
                raise ValueError(
                    f"{where} must hold whole rows of {row} bytes for {self.type}, got "
                    f"{array.nbytes}"
                )
            expected = array.nbytes
        else:
            expected = memref_size_in_bytes(self.type)
        if array.nbytes != expected:
            raise ValueError(
                f"{where} must hold {expected} bytes for {self.type}, got {array.nbytes}"
            )
        if self.is_output and not array.flags.writeable:
            raise ValueError(f"{where} is an output and must be writeable")


def buffer_specs(module: ModuleOp) -> dict[str, list[BufferSpec | None]]:
    """Per function of a lowered module, the buffer each pointer argument stands for
    (from the `strato.memref_type` argument attributes the lowering leaves)."""
    specs: dict[str, list[BufferSpec | None]] = {}
    for op in module.ops:
        if not isinstance(op, llvm_dialect.FuncOp) or op.arg_attrs is None:
            continue
        entries: list[BufferSpec | None] = []
        for attrs in op.arg_attrs.data:
            type_ = attrs.data.get(MEMREF_TYPE_ARG_ATTR)
            is_output = "loop.output" in attrs.data
            entries.append(
                BufferSpec(type_, is_output) if isinstance(type_, MemRefType) else None
            )
        specs[op.sym_name.data] = entries
    return specs


class JitFunction:
    """A compiled function, callable with numpy arrays (for pointer parameters) and
    Python numbers (for scalar parameters). Outputs are written into their arrays."""

    def __init__(
        self,
        owner: JitModule,
        name: str,
        address: int,
        param_types: Sequence[str],
        return_type: str,
        buffers: Sequence[BufferSpec | None] | None,
    ):
        self._owner = owner  # keeps the machine code alive
        self.name = name
        self.param_types = tuple(param_types)
        self.return_type = return_type
        self.buffers = tuple(buffers) if buffers is not None else None
        restype = None if return_type == "void" else _SCALAR_CTYPES[return_type]
        argtypes = [_SCALAR_CTYPES[t] for t in self.param_types]
        self._cfunc = ctypes.CFUNCTYPE(restype, *argtypes)(address)
        self.address = address

    def _pointer(self, position: int, value: object) -> int | None:
        if isinstance(value, int):
            return value
        if not isinstance(value, np.ndarray):
            raise TypeError(
                f"{self.name}: argument {position} must be a numpy array, got {type(value).__name__}"
            )
        if not value.flags.c_contiguous:
            raise ValueError(f"{self.name}: argument {position} must be C-contiguous")
        if self.buffers is not None and self.buffers[position] is not None:
            self.buffers[position].check(self.name, position, value)
        return data_address(value)

    def __call__(self, *args: object) -> object:
        if len(args) != len(self.param_types):
            raise TypeError(
                f"{self.name} takes {len(self.param_types)} arguments, got {len(args)}"
            )
        converted = [
            self._pointer(i, arg) if kind == "ptr" else arg
            for i, (kind, arg) in enumerate(zip(self.param_types, args, strict=True))
        ]
        return self._cfunc(*converted)

    def call_unchecked(self, arrays: Sequence[np.ndarray | int]) -> object:
        """Call a function whose parameters are pointers (to `arrays`' data) and then
        integers (the ints of `arrays`), with no checks: for callers that checked the
        arrays already (a compiled model checks its inputs against its signature and
        allocates its outputs itself)."""
        return self._cfunc(
            *[data_address(array) if isinstance(array, np.ndarray) else array for array in arrays]
        )


def _bind_weights(
    engine: llvm.ExecutionEngine, module: llvm.ModuleRef, weights: WeightBlob
) -> None:
    """Map each weight symbol `module` declares to its bytes in `weights`, for `engine`
    (before it resolves symbols, i.e. before `finalize_object`). A declared variable
    that neither the blob nor the process provides is a `JitError`: MCJIT would abort
    the process."""
    for variable in module.global_variables:
        if not variable.is_declaration:
            continue
        if variable.name in weights.symbols:
            engine.add_global_mapping(variable, weights.address(variable.name))
        elif not llvm.address_of_symbol(variable.name):
            raise JitError(f"no bytes for the external constant '{variable.name}'")


class JitModule:
    """An LLVM module compiled to machine code in this process, for `machine` (the host
    by default; another CPU only where its code runs here, e.g. a subset of the host's
    features). `weights` holds the bytes of the external constants the module declares
    (see the module docstring)."""

    def __init__(
        self,
        source: LLVMSource,
        *,
        machine: HostTarget | None = None,
        opt_level: int = 3,
        weights: WeightBlob = EMPTY,
        objects: Sequence[CompiledObject] = (),
    ):
        self.machine = machine or host_target()
        """The CPU the code is compiled for."""
        if not runs_here(self.machine):
            raise JitError(
                f"code for {self.machine.triple} does not run on this machine "
                f"({host_target().triple}): compile it to an object file (ForeignModule, "
                "compile_object)"
            )
        _load_c_runtime()
        self.opt_level = opt_level
        self._buffers = buffer_specs(source) if isinstance(source, ModuleOp) else {}
        self._machine = target_machine(self.machine, opt_level, jit=True)
        self.llvm_ir = _ir_text(source, self.machine)
        """The LLVM IR text compiled (before optimization), e.g. to save as `.ll`."""
        self._module = _parse(self.llvm_ir)
        optimize(self._module, self._machine, opt_level)
        self._engine = llvm.create_mcjit_compiler(self._module, self._machine)
        self.weights = weights
        """The bytes of the module's weight symbols (kept alive with the code)."""
        self.objects = tuple(objects)
        """Objects compiled apart (a model's kernels) whose functions the module calls."""
        _bind_weights(self._engine, self._module, weights)
        for compiled in self.objects:
            self._engine.add_object_file(llvm.ObjectFileRef.from_data(compiled.object_code))
        self.object_code: bytes | None = None
        """The machine code MCJIT compiled, as an object file: `ObjectModule` loads it
        again, in this process or another, without compiling."""
        self._engine.set_object_cache(self._keep_object)
        self._engine.finalize_object()
        self._engine.run_static_constructors()
        self._functions: dict[str, JitFunction] = {}

    def _keep_object(self, module: llvm.ModuleRef, buffer: bytes) -> None:
        self.object_code = bytes(buffer)

    def machine_code(self) -> MachineCode:
        """The compiled code with what loading it again needs (`strato.targets.llvm.aot`)."""
        assert self.object_code is not None, "MCJIT compiled no object"
        machine = self.machine
        return MachineCode(
            self.object_code,
            tuple(self.imports),
            machine.triple,
            machine.cpu,
            machine.features,
            weights=self.weights,
            objects=tuple(self.objects),
        )

    @property
    def imports(self) -> list[str]:
        """Functions the module and its other objects call but do not define (libc, libm,
        runtime entry points; LLVM intrinsics excepted): what loading them needs."""
        return _imports(self._module, self.objects)

    def function(self, name: str) -> JitFunction:
        """The compiled function `name`, ready to call."""
        if name in self._functions:
            return self._functions[name]
        try:
            fn = self._module.get_function(name)
        except NameError as err:
            raise KeyError(f"no function '{name}' in the compiled module") from err
        if fn.is_declaration:
            raise KeyError(f"'{name}' is only declared in the compiled module")
        fn_type = fn.global_value_type
        param_types = [str(t) for t in fn_type.get_function_parameters()]
        return_type = str(fn_type.get_function_return())
        for kind in [*param_types, return_type]:
            if kind != "void" and kind not in _SCALAR_CTYPES:
                raise TypeError(
                    f"{name}: cannot call a function with a parameter of type {kind}"
                )
        address = self._engine.get_function_address(name)
        jit_fn = JitFunction(
            self, name, address, param_types, return_type, self._buffers.get(name)
        )
        self._functions[name] = jit_fn
        return jit_fn

    @property
    def function_names(self) -> list[str]:
        return [f.name for f in self._module.functions if not f.is_declaration]

    @property
    def optimized_ir(self) -> str:
        """The LLVM IR after optimization."""
        return str(self._module)

    def assembly(self) -> str:
        """The host assembly of the module."""
        return self._machine.emit_assembly(self._module)


def _imports(module: llvm.ModuleRef, objects: Sequence[CompiledObject]) -> list[str]:
    defined = {compiled.symbol for compiled in objects}
    names = {f.name for f in module.functions if f.is_declaration and not f.name.startswith("llvm.")}
    for compiled in objects:
        names.update(compiled.imports)
    return sorted(names - defined)


class ForeignModule:
    """An LLVM module compiled for a machine whose code does not run in this process
    (another architecture or system: `host.runs_here`): the object file MCJIT would
    load on that machine, written and never run here. Its `machine_code()` saves as a
    JIT-compiled module's does (`strato.targets.llvm.aot`, for strato on that machine),
    and `compile_object` makes the object file to link into a C program there."""

    def __init__(
        self,
        source: LLVMSource,
        *,
        machine: HostTarget,
        opt_level: int = 3,
        weights: WeightBlob = EMPTY,
        objects: Sequence[CompiledObject] = (),
    ):
        self.machine = machine
        self.llvm_ir = _ir_text(source, machine)
        """The LLVM IR text compiled (before optimization)."""
        module = _parse(self.llvm_ir)
        codegen = target_machine(machine, opt_level, jit=True)
        optimize(module, codegen, opt_level)
        self.weights = weights
        self.objects = tuple(objects)
        self.imports = _imports(module, self.objects)
        self.object_code = codegen.emit_object(module)

    def machine_code(self) -> MachineCode:
        machine = self.machine
        return MachineCode(
            self.object_code,
            tuple(self.imports),
            machine.triple,
            machine.cpu,
            machine.features,
            weights=self.weights,
            objects=self.objects,
        )


_ELF_MACHINES = {"x86_64": 62, "aarch64": 183, "arm64": 183, "riscv64": 243}
"""ELF `e_machine` of the architectures strato compiles for, by triple prefix."""


def check_elf_object(data: bytes) -> tuple[set[str], set[str]]:
    """Refuse bytes that are not a well-formed 64-bit little-endian relocatable ELF
    object for this architecture (LLVM's object reader crashes the process on malformed
    input instead of reporting it): header, machine, every section and symbol within the
    data. Returns the global symbols the object defines and those it needs."""
    import struct

    def fail(reason: str) -> JitError:
        return JitError(f"not a loadable object file: {reason}")

    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise fail("no ELF header")
    if data[4] != 2 or data[5] != 1:
        raise fail("not a 64-bit little-endian ELF file")
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    if e_type != 1:
        raise fail(f"ELF type {e_type}, not a relocatable object")
    arch = host_target().triple.split("-")[0]
    expected = _ELF_MACHINES.get(arch)
    if expected is not None and e_machine != expected:
        raise fail(f"machine {e_machine} is not this machine's ({arch})")
    (shoff,) = struct.unpack_from("<Q", data, 40)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 58)
    if shentsize != 64 or shnum == 0 or shstrndx >= shnum or shoff + shnum * 64 > len(data):
        raise fail("its section table lies outside the file")
    sections = []
    for index in range(shnum):
        header = shoff + index * 64
        (kind,) = struct.unpack_from("<I", data, header + 4)
        offset, size, link = struct.unpack_from("<QQI", data, header + 24)
        if kind != 8 and offset + size > len(data):  # 8: SHT_NOBITS occupies no bytes
            raise fail(f"section {index} lies outside the file")
        sections.append((kind, offset, size, link))
    defined: set[str] = set()
    needed: set[str] = set()
    for kind, offset, size, link in sections:
        if kind != 2:  # SHT_SYMTAB
            continue
        if link >= shnum or sections[link][0] != 3:  # its SHT_STRTAB
            raise fail("its symbol table has no string table")
        _, names_at, names_size, _ = sections[link]
        for entry in range(offset, offset + size - size % 24, 24):
            name_at, info, _, section = struct.unpack_from("<IBBH", data, entry)
            if info >> 4 not in (1, 2) or name_at == 0:  # global or weak, named
                continue
            if name_at >= names_size:
                raise fail("a symbol's name lies outside its string table")
            end = data.find(b"\0", names_at + name_at, names_at + names_size)
            if end < 0:
                raise fail("a symbol's name lies outside its string table")
            name = data[names_at + name_at : end].decode(errors="replace")
            (needed if section == 0 else defined).add(name)
    return defined, needed


class ObjectModule:
    """An object file of `JitModule.object_code` loaded into this process by MCJIT:
    nothing is compiled. Every function it imports must resolve first (`imports`):
    MCJIT aborts the process on a symbol it cannot find, so a missing one is a
    `JitError` here instead."""

    def __init__(
        self,
        data: bytes,
        imports: Sequence[str] = (),
        weights: WeightBlob = EMPTY,
        objects: Sequence[bytes] = (),
    ):
        _load_c_runtime()
        missing = [name for name in imports if not llvm.address_of_symbol(name)]
        if missing:
            raise JitError(
                f"the object code needs {', '.join(missing)}, which this process does not provide"
            )
        defined: set[str] = set(weights.symbols)
        needed: set[str] = set()
        for object_code in (data, *objects):
            symbols_defined, symbols_needed = check_elf_object(object_code)
            defined |= symbols_defined
            needed |= symbols_needed
        # MCJIT aborts the process on a symbol it cannot resolve
        unresolved = sorted(
            name for name in needed - defined
            if not name.startswith("_GLOBAL_OFFSET_TABLE_") and not llvm.address_of_symbol(name)
        )  # fmt: skip
        if unresolved:
            raise JitError(
                f"the object code needs {', '.join(unresolved[:4])}"
                f"{' ...' if len(unresolved) > 4 else ''}, which neither its objects nor this "
                "process provide"
            )
        self._machine = target_machine(host_target(), jit=True)
        # the weight symbols, declared in the engine's own module so they map per engine
        declarations = "".join(f'@"{name}" = external constant i8\n' for name in weights.symbols)
        symbols = llvm.parse_assembly(declarations)
        self._engine = llvm.create_mcjit_compiler(symbols, self._machine)
        self.weights = weights
        _bind_weights(self._engine, symbols, weights)
        try:
            for object_code in (data, *objects):
                self._engine.add_object_file(llvm.ObjectFileRef.from_data(object_code))
        except RuntimeError as err:
            raise JitError(f"not a loadable object file: {str(err).strip()}") from None
        self._engine.finalize_object()

    def address(self, name: str) -> int:
        """The address of function `name` (`KeyError` when the object defines none)."""
        address = self._engine.get_function_address(name)
        if not address:
            raise KeyError(f"no function '{name}' in the object code")
        return address


def compile_object(
    source: LLVMSource,
    *,
    machine: HostTarget | None = None,
    opt_level: int = 3,
    portable: bool = False,
    weights: WeightBlob = EMPTY,
) -> bytes:
    """An object file (ELF on Linux) for `source`: optimized and compiled for `machine`
    (the host by default), or for a generic CPU of its architecture when `portable`.
    The weight symbols `source` declares are defined in the object from `weights`, and
    the thread pool of its parallel loops is defined in it too
    (`parallel_runtime.define_runtime_in`): the object needs only the C library, libm
    and pthreads. Both are internal: two models' objects link into one program."""
    from strato.targets.llvm.parallel_runtime import define_runtime_in

    machine = machine or host_target()
    codegen = target_machine(machine, opt_level, portable=portable)
    module = _parse(_ir_text(source, machine))
    if weights.symbols:
        module.link_in(_parse(_weight_definitions(weights)))
        for name in weights.symbols:
            module.get_global_variable(name).linkage = llvm.Linkage.internal
    define_runtime_in(module, machine.triple)
    optimize(module, codegen, opt_level)
    return codegen.emit_object(module)


_BYTE_ESCAPES = np.array([f"\\{byte:02X}".encode() for byte in range(256)], dtype="S3")
"""`\\XX` for each byte value: a whole weight is escaped by one gather."""


def link_ir(parts: Sequence[str], public: str, machine: HostTarget | None = None) -> str:
    """One LLVM module of the IR texts `parts` (an entry's module, then the modules of the
    functions it declares), every function but `public` internal: the text a C program
    or `compile_object` takes. With `machine`, the module says it is for that machine's
    triple and data layout."""
    layout = str(target_machine(machine, jit=True).target_data) if machine is not None else None

    def parse(text: str) -> llvm.ModuleRef:
        part = _parse(text)
        if machine is not None:
            part.triple = machine.triple
            part.data_layout = layout
        return part

    module = parse(parts[0])
    for text in parts[1:]:
        module.link_in(parse(text))
    for function in module.functions:
        if not function.is_declaration and function.name != public:
            function.linkage = llvm.Linkage.internal
    return str(module)


def _weight_definitions(weights: WeightBlob) -> str:
    """LLVM IR defining each weight symbol as a constant byte array of its bytes."""
    lines = []
    for name, (offset, size) in weights.symbols.items():
        data = weights.data[offset : offset + size]
        text = _BYTE_ESCAPES[data].tobytes().decode("ascii")
        lines.append(f'@"{name}" = constant [{size} x i8] c"{text}", align {ALIGNMENT}\n')
    return "".join(lines)


def write_object(
    source: LLVMSource, path: str | Path, *, opt_level: int = 3, portable: bool = False
) -> None:
    Path(path).write_bytes(
        compile_object(source, opt_level=opt_level, portable=portable)
    )


def write_llvm_ir(source: LLVMSource, path: str | Path) -> None:
    """Write the (unoptimized) LLVM IR text of `source` to `path` (`.ll`)."""
    Path(path).write_text(_ir_text(source))


__all__ = [
    "ForeignModule",
    "JitError",
    "JitFunction",
    "JitModule",
    "ObjectModule",
    "check_elf_object",
    "compile_object",
    "link_ir",
    "optimize",
    "write_llvm_ir",
    "write_object",
]
