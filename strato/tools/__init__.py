"""Command-line tools: strato-opt and strato."""
