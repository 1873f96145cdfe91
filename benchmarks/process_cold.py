"""What each path costs a fresh process, import included: medians side by side.

    python benchmarks/process_cold.py [--layers 4 32 80 200] [--samples 5] [--markdown]

For each size, fresh Python processes (interleaved, bytecode cached as after
a wheel install: a first, discarded round writes the ``.pyc`` files) build a
split decoder (``stitchgen.demo.split_decoder``; torch imported, as in any
process that compiles a model), forget every stitchgen module, then time one
path from its import to a callable:

* ``compile``: ``import stitchgen; stitchgen.compile(gm)``;
* ``compat``: ``from stitchgen import compat``, ``generate_execution_code``
  and ``compile_execution_fn`` (the vLLM drop-in); ``compat gen`` is its
  first ``generate_execution_code`` alone (imports excluded);
* ``flatten``: ``stitchgen.compile(gm, inline="flatten")``;
* ``format``: ``stitchgen.compile(gm, format=True)``;
* ``warm``: ``import stitchgen; stitchgen.load_artifact(path)`` on an
  artifact of the same graph saved beforehand (a compile cache's warm start);
* ``floor``: Python's own ``compile()`` of the code ``compile`` emits.

Times are medians in ms; read the ratios (``/compile``), not the absolute
times: the machines are noisy. Nothing here asserts: it measures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

PATHS = ("compile", "compat", "flatten", "format", "warm")

CHILD = r"""
import json, sys, time
import torch, torch.fx
from stitchgen.demo import split_decoder
path, layers, artifact = sys.argv[1], int(sys.argv[2]), sys.argv[3]
gm, inputs = split_decoder(layers)
for name in [m for m in sys.modules if m == "stitchgen" or m.startswith("stitchgen.")]:
    del sys.modules[name]  # the graph stays; the pipeline is imported anew, as in a fresh process
out = {}
t0 = time.perf_counter()
if path == "compat":
    from stitchgen import compat
    t1 = time.perf_counter()
    code, names, consts = compat.generate_execution_code(gm)
    out["compat gen"] = time.perf_counter() - t1
    fn = compat.compile_execution_fn(code, {}, names, consts)
elif path == "warm":
    import stitchgen
    fn = stitchgen.load_artifact(artifact)
else:
    import stitchgen
    options = {"flatten": {"inline": "flatten"}, "format": {"format": True}}.get(path, {})
    fn = stitchgen.compile(gm, **options)
out[path] = time.perf_counter() - t0
if path == "compile":
    code = stitchgen.generate(gm, format=False).code
    t2 = time.perf_counter()
    compile(code, "<floor>", "exec")
    out["floor"] = time.perf_counter() - t2
print(json.dumps(out))
"""


def _run(path: str, layers: int, artifact: str) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONWARNINGS"] = "ignore"
    out = subprocess.run(
        [sys.executable, "-c", CHILD, path, str(layers), artifact],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    if out.returncode:
        raise SystemExit(f"{path} at {layers} layers failed:\n{out.stderr[-3000:]}")
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _artifact(layers: int, directory: str) -> str:
    import stitchgen
    from stitchgen.demo import split_decoder

    gm, _ = split_decoder(layers)
    return str(stitchgen.generate(gm, format=False).save(os.path.join(directory, f"a{layers}")))


def measure(layers: int, samples: int, directory: str) -> dict[str, float]:
    artifact = _artifact(layers, directory)
    for path in PATHS:
        _run(path, layers, artifact)  # writes the bytecode caches; discarded
    runs: dict[str, list[float]] = {}
    for _ in range(samples):
        for path in PATHS:
            for key, value in _run(path, layers, artifact).items():
                runs.setdefault(key, []).append(value)
    return {key: statistics.median(values) * 1e3 for key, values in runs.items()}


COLUMNS = ("compile", "compat", "compat gen", "flatten", "format", "warm", "floor")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[4, 32, 80, 200])
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args(argv)
    header = ["layers", *(f"{c} ms" for c in COLUMNS), "compat/compile", "flatten/compile"]
    header += ["format/compile", "warm/compile"]
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for layers in args.layers:
            m = measure(layers, args.samples, directory)
            row = [str(layers), *(f"{m[c]:.1f}" for c in COLUMNS)]
            row += [f"{m[p] / m['compile']:.2f}" for p in ("compat", "flatten", "format", "warm")]
            rows.append(row)
            if not args.markdown:
                print("  ".join(f"{h}={v}" for h, v in zip(header, row, strict=True)), flush=True)
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + " --- |" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
