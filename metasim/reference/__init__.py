"""The benchmark kit's shared layer (issue 32): what every benchmark's checks against its
reference simulator use, whatever the benchmark.

- `benchmark`: the `Benchmark` entry a plug-in registers, from which `metasim check` and
  the contract test over all benchmarks follow;
- `spec`: a benchmark's reference simulator declared once (`ReferenceSpec`: venv, pins,
  probe, worker, timeouts, error class) and `Reference`, a started worker of it, to which
  a benchmark adds only its typed commands (docs/extending.md, "Add a benchmark");
- `refvenv`: a reference simulator's own virtualenv (`VenvSpec`: its pins, its probe)
  and the client of its worker process (`RefWorker`); `refwire`: the worker side (the
  JSON-lines codec and serving loop, run by path inside the other venv);
- `mjtable`: the MjModel element table (every numeric field per element, the rows' names),
  the same in metasim and in any reference venv;
- `peerlayer`: the shared folder that makes a peer harness's own code (LeRobot's envs)
  importable in a reference venv; `peer` and `peerwire`: a LeRobot peer's client base and
  its worker side (LeRobot's env built and stepped as `lerobot-eval` does);
- `images`: the image agreement measures (PSNR, mean absolute error).
"""
