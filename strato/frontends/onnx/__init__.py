"""The ONNX frontend: importer and backend API.

    from strato.frontends.onnx import import_model
    module = import_model("mlp.onnx")      # one func.func @main of graph ops

`op_table.ONNX_CONVERTERS` lists the operators imported; see `importer` for the rules.
"""

from strato.frontends.onnx.importer import ImportedModel, import_model, import_onnx

__all__ = ["ImportedModel", "import_model", "import_onnx"]
