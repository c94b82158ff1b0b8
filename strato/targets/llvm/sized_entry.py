"""Several compiled sizes of a model with dynamic dimensions in one object, behind one
entry that takes the sizes at run time.

A model whose inputs keep dynamic dimensions compiles per size
(`strato.specializing.ShapeSpecializingModel`); the sizes compiled so far link into one
LLVM module: each size's entry renamed `<name>_run_<size>` (its kernels stay internal,
renamed where two sizes' collide), the weights shared by content (the sizes of one model
read the same weights), and a dispatcher `<name>_run` that takes each open dimension's
size before the buffers, calls the entry compiled for those sizes, and returns
`<NAME>_NO_SUCH_SIZE` for sizes not compiled:

    int32_t bert_run(int64_t batch, int64_t sequence, const int64_t *input_ids,
                     const int64_t *attention_mask, float *logits);

    strato compile bert.onnx --sizes 'input_ids:[1,16] attention_mask:[1,16]' \\
                             --sizes 'input_ids:[1,128] attention_mask:[1,128]' -o bert.o
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from strato.diagnostics import StratoError
from strato.runtime.weight_blob import EMPTY, WeightBlob
from strato.targets.llvm.entry_abi import sample_loop_ir
from strato.targets.llvm.model import LLVMCompiledModel

STATUS_NO_SUCH_SIZE = 2
"""What the dispatcher returns for sizes no entry of the object was compiled for."""


@dataclass(frozen=True)
class SizedModels:
    """The compiled sizes of one model, as one object (see the module docstring):
    `dims` names the open dimensions in the dispatcher's order, and each size gives
    their values and the model compiled for them."""

    entry_symbol: str
    dims: tuple[str, ...]
    sizes: tuple[tuple[tuple[int, ...], LLVMCompiledModel], ...]
    samples: tuple[tuple[int, tuple[int | None, ...]] | None, ...] = ()
    """Per size, when the model is separable along one of its dimensions (at 1 in that
    size): the dimension's position and each buffer's bytes per sample (None: one
    buffer for all samples); the dispatcher then runs that size once per sample for
    any count of that dimension (`strato.runtime.batched`)."""

    def __post_init__(self) -> None:
        if not self.sizes:
            raise StratoError(
                "no size of the model is compiled yet: call it with the sizes to ship (or "
                "give `strato compile` each with --sizes), then write the object"
            )
        if self.samples and len(self.samples) != len(self.sizes):
            raise StratoError(f"{len(self.samples)} sample rules for {len(self.sizes)} sizes")
        seen = set()
        for values, model in self.sizes:
            if len(values) != len(self.dims):
                raise StratoError(f"size {list(values)} does not give the {len(self.dims)} dimensions {list(self.dims)}")
            if values in seen:
                raise StratoError(f"size {self.size_name(values)} is given twice")
            seen.add(values)
            if not isinstance(model, LLVMCompiledModel) or model.entry_symbol is None:
                raise StratoError(
                    f"size {self.size_name(values)} did not compile to one llvm entry (a "
                    "model with host operators has none): it cannot go in an object"
                )

    def size_name(self, values: Sequence[int]) -> str:
        return ", ".join(f"{dim}={value}" for dim, value in zip(self.dims, values, strict=True))

    def symbol_of(self, values: Sequence[int]) -> str:
        """The entry compiled for `values`: `<name>_run_<v0>x<v1>..`."""
        return f"{self.entry_symbol}_{'x'.join(str(v) for v in values)}"

    def linked(self) -> tuple[str, WeightBlob]:
        """The LLVM IR of every size's entry and kernels and of the dispatcher in one
        module, its weights declared external, and the blob of their bytes."""
        from strato.targets.llvm.jit import _parse

        module = None
        weights: dict[str, bytes] = {}
        by_content: dict[bytes, str] = {}
        for values, model in self.sizes:
            part = _parse(model.llvm_ir)
            part.get_function(model.entry_symbol).name = self.symbol_of(values)
            blob = EMPTY if model.machine_code is None else model.machine_code.weights
            for name, (offset, size) in blob.symbols.items():
                content = bytes(blob.data[offset : offset + size])
                digest = hashlib.sha256(content).digest()
                shared = by_content.get(digest)
                if shared is None:
                    shared = by_content[digest] = f"{self.entry_symbol}_w{len(weights)}"
                    weights[shared] = content
                try:
                    part.get_global_variable(name).name = shared
                except NameError:
                    continue  # a weight the code no longer reads
            if module is None:
                module = part
            else:
                module.link_in(part)
        assert module is not None
        module.link_in(_parse(self.dispatcher_ir()))
        return str(module), WeightBlob.pack(weights)

    def dispatcher_ir(self) -> str:
        """LLVM IR of `<name>_run(i64 dims.., ptr buffers..)`: the entry compiled for
        those dims; else, for a size compiled at 1 of a separable dimension whose other
        dims match, that entry once per sample; else `STATUS_NO_SUCH_SIZE`."""
        buffers = len(self.sizes[0][1].signature.inputs) + len(self.sizes[0][1].signature.outputs)
        parameters = [f"i64 %d{k}" for k in range(len(self.dims))]
        parameters += [f"ptr %b{k}" for k in range(buffers)]
        arguments = ", ".join(f"ptr %b{k}" for k in range(buffers))
        pointers = ", ".join(["ptr"] * buffers)
        lines = [f"declare i32 @{self.symbol_of(values)}({pointers})" for values, _ in self.sizes]
        lines += [f"define i32 @{self.entry_symbol}({', '.join(parameters)}) {{", "entry:"]
        block = "entry"  # the block being written
        for n, (values, _) in enumerate(self.sizes):  # the sizes compiled, exactly
            match = _all_equal(lines, f"s{n}", values)
            lines += [
                f"  br i1 {match}, label %size{n}, label %next{n}",
                f"size{n}:",
                f"  %status{n} = call i32 @{self.symbol_of(values)}({arguments})",
                f"  ret i32 %status{n}",
                f"next{n}:",
            ]
            block = f"next{n}"
        for n, ((values, _), samples) in enumerate(zip(self.sizes, self.samples, strict=False)):
            if samples is None:
                continue
            axis, sample_bytes = samples
            others = [None if k == axis else value for k, value in enumerate(values)]
            match = _all_equal(lines, f"o{n}", others)
            lines.append(f"  br i1 {match}, label %loop_{n}, label %over{n}")
            lines += sample_loop_ir(
                self.symbol_of(values), f"%d{axis}", sample_bytes, tag=f"_{n}", from_block=block
            )
            lines.append(f"over{n}:")
            block = f"over{n}"
        lines += [f"  ret i32 {STATUS_NO_SUCH_SIZE}", "}", ""]
        return "\n".join(lines)

    @property
    def llvm_ir(self) -> str:
        """The LLVM IR text of the whole object, its weights declared external."""
        return self.linked()[0]

    def object_code(self, *, portable: bool = False) -> bytes:
        """The object file: every size, the dispatcher, the weights once, the thread
        pool (`strato.targets.llvm.jit.compile_object`)."""
        from strato.targets.llvm.host import HostTarget
        from strato.targets.llvm.jit import compile_object

        text, weights = self.linked()
        code = self.sizes[0][1].machine_code
        machine = None if code is None else HostTarget(code.triple, code.cpu, code.features)
        return compile_object(text, machine=machine, portable=portable, weights=weights)

    def c_header(self) -> str:
        from strato.targets.llvm.c_header import sized_c_header

        return sized_c_header(self)


def _all_equal(lines: list[str], tag: str, values: Sequence[int | None]) -> str:
    """Append to `lines` the tests that each `%d<k>` is `values[k]` (None: any); the
    i1 value (or `true`) that all hold."""
    match = "true"
    for k, value in enumerate(values):
        if value is None:
            continue
        lines.append(f"  %{tag}_{k} = icmp eq i64 %d{k}, {value}")
        if match == "true":
            match = f"%{tag}_{k}"
        else:
            lines.append(f"  %{tag}_and{k} = and i1 {match}, %{tag}_{k}")
            match = f"%{tag}_and{k}"
    return match


__all__ = ["STATUS_NO_SUCH_SIZE", "SizedModels"]
