"""The VTA target: the accelerator (configuration, ISA, simulator, runtime) and everything
strato compiles for it.

The accelerator:

- `config`: the hardware configuration (log2 parameters) and every width derived from it;
- `isa`: LOAD/STORE/GEMM/ALU/FINISH and micro-ops, with their exact 128/32-bit encodings;
- `simulator`: bit-exact semantics over DRAM in numpy arrays, token queues, diagnostics
  with instruction indices, VTA's counters (`python -m strato.vta.simulator BUNDLE_DIR`);
- `cycle_model`: three modules running concurrently under tokens, total and busy cycles;
- `runtime`: the instruction-stream builder (2-D DMA, micro-op kernels and their cache,
  dependence pushes and pops, synchronize);
- `layout` and `bundle`: the NCHW1n16c / OIHW16o16i element orders and the on-disk bundle;
- `examples`: a tiled GEMM and a conv2d written against the runtime, one or two virtual
  threads (`python -m strato.vta.examples`).

The compiler for it:

- `graph_quantize` (`graph-quantize`): conv2d and dense to int8 with power-of-two scales;
- `intrinsics` (`vta.gemm`) and `conv2d_template`: the VTA conv2d schedule template,
  tensorized with the GEMM core;
- `convert_loops_to_vta`, `vta_insert_dependence_tokens`, `vta_inject_virtual_threads`:
  the loop level to a vta-dialect control program, its tokens and virtual threads;
- `emit` (the instruction stream of a control program), `interpret` (run it on the
  simulator), `reference` (the dialect's sequential semantics), `emitter` (`strato-opt
  -t vta`);
- `compile`: `run_conv2d` and `run_dense`, one int8 layer through that path;
- `graph`, `partition` and `run_model`: a quantized graph with its convs on the simulator
  and the rest compiled by the llvm target, bit-exact against numpy
  (`python -m strato.vta.run_model resnet18`);
- `target`: the `vta` compile target.

`strato.vta` is the public face of this package.
"""
