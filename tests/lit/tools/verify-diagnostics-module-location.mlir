// A diagnostic without a line (here: the interpreter cannot find the function it was
// asked for) is matched by `expected-error @unknown`.
// RUN: strato-opt %s --verify-diagnostics -t 'interpret{function=nowhere}'

// expected-error @unknown {{no function named @nowhere in the module}}
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  func.return %a : tensor<4xf32>
}
