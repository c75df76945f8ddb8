"""The benchmark kit's shared layer: what every benchmark's checks against its
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
- `modeldiff`: the model-diff engine over two element-table dumps, each difference with its
  benchmark's listed reason (a `Listed` table in the benchmark's own file) or UNLISTED;
- `checkcli`: what the check verbs share on the command line (output flags, the summary,
  the one-line report of a reference that failed);
- `peerlayer`: the shared folder that makes a peer harness's own code (LeRobot's envs)
  importable in a reference venv; `peer` and `peerwire`: a LeRobot peer's client base and
  its worker side (LeRobot's env built and stepped as `lerobot-eval` does);
- `images`: the image agreement measures (PSNR, mean absolute error).
"""
