// apply-schedule reports a step that cannot apply, a kernel the module lacks, an
// unknown primitive and a malformed trace as one-line diagnostics.
// RUN: not strato-opt %s -p 'convert-te-to-loops,apply-schedule{trace="%S/Inputs/error-step.json"}' 2>&1 | filecheck %s --check-prefix=STEP
// RUN: not strato-opt %s -p 'convert-te-to-loops,apply-schedule{trace="%S/Inputs/error-kernel.json"}' 2>&1 | filecheck %s --check-prefix=KERNEL
// RUN: not strato-opt %s -p 'convert-te-to-loops,apply-schedule{trace="%S/Inputs/error-primitive.json"}' 2>&1 | filecheck %s --check-prefix=PRIMITIVE
// RUN: not strato-opt %s -p 'convert-te-to-loops,apply-schedule{trace="%S/Inputs/error-json.json"}' 2>&1 | filecheck %s --check-prefix=JSON
// RUN: not strato-opt %s -p 'convert-te-to-loops,apply-schedule{trace="%S/Inputs/missing.json"}' 2>&1 | filecheck %s --check-prefix=MISSING

// STEP: error: apply-schedule: step 1 (parallel) of the trace of @dense_relu: cannot parallel: loop k of stage dense is a reduction loop
// STEP-NOT: Traceback
// KERNEL: error: apply-schedule: no kernel named @nowhere in the module (kernels: dense_relu)
// PRIMITIVE: error: apply-schedule: step 0 (rfactor) of the trace of @dense_relu: unknown schedule primitive 'rfactor' in the trace
// JSON: error: apply-schedule: {{.*}}error-json.json: a trace is not valid JSON
// MISSING: error: apply-schedule: cannot read trace file {{.*}}missing.json: No such file or directory
te.primitive @dense_relu {
  %x = te.placeholder "x" : tensor<4x3xf32>
  %w = te.placeholder "w" : tensor<6x3xf32>
  %d = te.reduce "dense" sum (%i, %j) over (%k : 3) init 0.0 : tensor<4x6xf32> {
    %a = te.read %x[%i, %k] : tensor<4x3xf32>
    %b = te.read %w[%j, %k] : tensor<6x3xf32>
    %p = arith.mulf %a, %b : f32
    te.yield %p : f32
  }
  %r = te.compute "relu" (%i, %j) : tensor<4x6xf32> {
    %v = te.read %d[%i, %j] : tensor<4x6xf32>
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    te.yield %m : f32
  }
  te.output %r : tensor<4x6xf32>
}
