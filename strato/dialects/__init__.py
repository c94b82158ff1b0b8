"""strato dialects: graph, te, loop."""
