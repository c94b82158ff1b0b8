"""The LLVM target: loop level to the llvm dialect, LLVM IR, llvmlite machine code."""
