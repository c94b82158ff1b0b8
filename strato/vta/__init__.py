"""The VTA accelerator: configuration, ISA, simulator and runtime."""
