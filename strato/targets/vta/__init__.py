"""The VTA target: a vta-dialect control program emitted as an instruction stream
(`emit`), and run on the simulator (`interpret`)."""
