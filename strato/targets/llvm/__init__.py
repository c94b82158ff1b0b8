"""The LLVM target: loop level to the llvm dialect, LLVM IR, llvmlite machine code.

- `strato.targets.llvm.convert_loops_to_llvm`: the pass (`convert-loops-to-llvm`) and
  `convert_loops_to_llvm(module)`; its patterns live here, one module per source
  dialect (`arith_to_llvm`, `math_to_llvm`, `memref_to_llvm`, `func_to_llvm`,
  `cf_to_llvm`, `scf_to_llvm`, `loop_to_llvm`), each with a `*_patterns()` collection.
- `emit`: llvm-dialect module -> LLVM IR text through llvmlite (`emit_llvm_ir`, the
  reference, and `LLVMIRTarget` for `-t llvm`); `ir_printer.print_llvm_ir` prints the
  same module directly, without llvmlite objects, for the compile path.
- `jit`: LLVM IR -> host machine code (`JitModule`, `compile_object`, `write_llvm_ir`).
- `host`: the host triple, CPU and target machines.

Nothing is imported here, so importing a pattern module does not load llvmlite.
"""
