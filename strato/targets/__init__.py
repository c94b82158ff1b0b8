"""Code generation targets: `llvm` (CPU through llvmlite) and, later, `vta`."""
