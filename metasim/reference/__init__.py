"""The benchmark kit's shared layer (issue 32): what every benchmark's checks against its
reference simulator use, whatever the benchmark.

- `benchmark`: the `Benchmark` entry a plug-in registers, from which `metasim check` and
  the contract test over all benchmarks follow;
- `refvenv`: a reference simulator's own virtualenv (`VenvSpec`: its pins, its probe)
  and the client of its worker process (`RefWorker`); `refwire`: the worker side (the
  JSON-lines codec and serving loop, run by path inside the other venv);
- `peerlayer`: the shared folder that makes a peer harness's own code (LeRobot's envs)
  importable in a reference venv;
- `images`: the image agreement measures (PSNR, mean absolute error).
"""
