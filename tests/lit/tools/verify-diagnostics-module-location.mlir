// A diagnostic about the whole module (here: the interpreter cannot find the function
// it was asked for) is located at the start of the module, line 1 of the input or of
// its chunk, as mlir-opt locates the implicit module; `@unknown` still matches a
// diagnostic that has no line.
// RUN: strato-opt %s --verify-diagnostics -t 'interpret{function=nowhere}'

// expected-error @-6 {{no function named @nowhere in the module}}
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
