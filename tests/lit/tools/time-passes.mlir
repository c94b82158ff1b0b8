// --time-passes reports the wall time of parsing, of each pass in pipeline order (a
// repeated pass gets its own row), of verification and of output, to stderr.
// RUN: strato-opt %s -p convert-graph-to-te,cse,cse --time-passes 2>&1 >/dev/null | filecheck %s
// Times of a split input add up over its chunks: still one report.
// RUN: strato-opt %s --split-input-file -p cse --time-passes 2>&1 >/dev/null | filecheck %s --check-prefix=SPLIT

// CHECK:      ===-------------------------------------------------------------------------===
// CHECK-NEXT:                          ... Execution time report ...
// CHECK-NEXT: ===-------------------------------------------------------------------------===
// CHECK-NEXT:   Total Execution Time: {{[0-9]+\.[0-9]+}} seconds
// CHECK-EMPTY:
// CHECK-NEXT:   ----Wall Time----  ----Name----
// CHECK-NEXT:   {{ *[0-9]+\.[0-9]+ \( *[0-9]+\.[0-9]%\)}}  Parser
// CHECK-NEXT:   {{ *[0-9]+\.[0-9]+ \( *[0-9]+\.[0-9]%\)}}  convert-graph-to-te
// CHECK-NEXT:   {{ *[0-9]+\.[0-9]+ \( *[0-9]+\.[0-9]%\)}}  cse
// CHECK-NEXT:   {{ *[0-9]+\.[0-9]+ \( *[0-9]+\.[0-9]%\)}}  cse (2)
// CHECK-NEXT:   {{ *[0-9]+\.[0-9]+ \( *[0-9]+\.[0-9]%\)}}  Verifier
// CHECK-NEXT:   {{ *[0-9]+\.[0-9]+ \( *[0-9]+\.[0-9]%\)}}  Output
// CHECK-NEXT:   {{ *[0-9]+\.[0-9]+ \( *[0-9]+\.[0-9]%\)}}  Rest
// CHECK-NEXT:   {{ *[0-9]+\.[0-9]+ \(100\.0%\)}}  Total

// SPLIT:      Execution time report
// SPLIT:      Parser
// SPLIT-NEXT: cse
// SPLIT:      Total
// SPLIT-NOT:  Execution time report

func.func @relu(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %r = graph.relu %x : tensor<2x4xf32>
  func.return %r : tensor<2x4xf32>
}

// -----

func.func @id(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  func.return %x : tensor<2x4xf32>
}
