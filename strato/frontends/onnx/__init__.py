"""The ONNX frontend: importer and backend API."""
