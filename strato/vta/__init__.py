"""The VTA accelerator: configuration, ISA, simulator and runtime.

- `config`: the hardware configuration (log2 parameters) and every width derived from it;
- `isa`: LOAD/STORE/GEMM/ALU/FINISH and micro-ops, with their exact 128/32-bit encodings;
- `simulator`: bit-exact semantics over DRAM in numpy arrays, token queues, diagnostics
  with instruction indices, VTA's counters (`python -m strato.vta.simulator BUNDLE_DIR`);
- `cycle_model`: three modules running concurrently under tokens, total and busy cycles;
- `runtime`: the instruction-stream builder (2-D DMA, micro-op kernels and their cache,
  dependence pushes and pops, synchronize);
- `layout` and `bundle`: the NCHW1n16c / OIHW16o16i element orders and the on-disk bundle;
- `examples`: a tiled GEMM and a conv2d written against the runtime, one or two virtual
  threads (`python -m strato.vta.examples`);
- `compile`: `run_conv2d`, one int8 conv2d through the compiler path (te kernel, VTA
  template schedule with the vta.gemm tensorize intrinsic, convert-loops-to-vta,
  dependence tokens, virtual threads, instruction stream, simulator);
- `graph` and `run_model`: a quantized graph with its convs on the simulator, bit-exact
  against numpy (`python -m strato.vta.run_model resnet18`);
- `partition`: the same graph split into VTA steps and CPU functions compiled by the
  llvm target, what the `vta` compile target runs (strato.targets.vta.compile_target).
"""
