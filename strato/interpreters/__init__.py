"""Reference interpreters for every level: the oracles of the equivalence tests.

- `graph.run_graph`: graph-dialect functions on numpy arrays, op by op;
- `te.run_te`: te primitives and the functions that call them;
- `loop.run_loops`: loop nests over buffers, on xDSL's interpreter.

Each takes a module, the numpy inputs of its entry function, and returns the outputs.
"""
