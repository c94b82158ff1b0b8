"""The runtime: compiled models, memory planning, execution."""
