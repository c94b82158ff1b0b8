"""`strato bench`: strato measured against the best CPU runtimes, in one run.

    pip install -e '.[bench]'            # onnxruntime, tqdm, threadpoolctl (apache-tvm optional)
    strato bench                         # GEMM 1024^3, conv layers C1-C12, every zoo model
    strato bench --quick --json out.json

For each workload, strato and each peer (onnxruntime; TVM Relax untuned, when `tvm` is
importable; numpy for GEMM) compile or prepare it once; strato's outputs are checked
against every peer's; then all sides are timed, interleaved, at each thread count (the
same for every side). The report gives median latency, GFLOP/s, the strato/peer ratio,
compile times, the machine, the versions and the thread settings.

    workloads.py   what is measured (GEMM, C1-C12, zoo) and FLOP counts
    peers.py       the sides: strato, onnxruntime, TVM Relax, numpy
    runner.py      checking and timing
    report.py      the tables and the JSON document
    machine.py     CPU, cores, features
    progress.py    the progress bar
    cli.py         the `strato bench` command
"""
