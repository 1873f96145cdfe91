"""What each path costs a fresh process, import included: medians side by side.

    python benchmarks/process_cold.py [--layers 4 32 80 200] [--samples 5] [--markdown] [--quick]

For each size, fresh Python processes (interleaved, bytecode cached as after
a wheel install: a first, discarded round writes the ``.pyc`` files) build a
split decoder (``stitchgen.demo.split_decoder``; torch imported, as in any
process that compiles a model), forget every stitchgen module, then time one
path from its import to a callable:

* ``compile``: ``import stitchgen; stitchgen.compile(gm)``;
* ``compat``: ``from stitchgen import compat``, ``generate_execution_code``
  and ``compile_execution_fn`` (the vLLM drop-in); ``compat gen`` is its
  first ``generate_execution_code`` alone (imports excluded);
* ``format``: ``stitchgen.compile(gm, format=True)``;
* ``warm``: ``import stitchgen; stitchgen.load_artifact(path)`` on an
  artifact of the same graph saved beforehand (a compile cache's warm start);
* ``header`` and ``calls``: ``stitchgen.compile(gm, templates=Templates(DIR))``
  for a downstream project's templates: one block overridden, the header
  (``module.py.j2``) or a line before every piece call (``function.py.j2``);
  their compiled templates are kept in a cache folder of the benchmark's
  own (``STITCHGEN_CACHE_DIR``), warmed by the discarded round, as a
  project's are after its first process;
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

PATHS = ("compile", "compat", "format", "warm", "header", "calls")
#: the downstream projects' templates: one block overridden each
OVERRIDES = {
    "header": (
        "module.py.j2",
        '{% extends "stitchgen/module.py.j2" %}\n'
        "{% block header %}\n# acme: generated\n{{ super() -}}\n{% endblock %}\n",
    ),
    "calls": (
        "function.py.j2",
        '{% extends "stitchgen/function.py.j2" %}\n'
        "{% block before_call %}\n{% if stmt.is_piece %}\n    pass  # a piece call\n"
        "{% endif %}\n{% endblock %}\n",
    ),
}

CHILD = r"""
import json, sys, time
import torch, torch.fx
from stitchgen.demo import split_decoder
path, layers, artifact, templates = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
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
elif path in ("header", "calls"):
    import stitchgen
    fn = stitchgen.compile(gm, templates=stitchgen.Templates(templates))
else:
    import stitchgen
    options = {"format": {"format": True}}.get(path, {})
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
    here = os.path.dirname(artifact)
    env["STITCHGEN_CACHE_DIR"] = os.path.join(here, "cache")
    templates = os.path.join(here, path)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, path, str(layers), artifact, templates],
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


def _templates(directory: str) -> None:
    for path, (name, text) in OVERRIDES.items():
        os.makedirs(os.path.join(directory, path), exist_ok=True)
        with open(os.path.join(directory, path, name), "w") as f:
            f.write(text)


def measure(layers: int, samples: int, directory: str, warm_up: bool = True) -> dict[str, float]:
    artifact = _artifact(layers, directory)
    _templates(directory)
    for path in PATHS if warm_up else ():
        _run(path, layers, artifact)  # writes the bytecode caches; discarded
    runs: dict[str, list[float]] = {}
    for _ in range(samples):
        for path in PATHS:
            for key, value in _run(path, layers, artifact).items():
                runs.setdefault(key, []).append(value)
    return {key: statistics.median(values) * 1e3 for key, values in runs.items()}


COLUMNS = (
    "compile",
    "compat",
    "compat gen",
    "format",
    "warm",
    "header",
    "calls",
    "floor",
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[4, 32, 80, 200])
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="no discarded first round (a smoke run: the figures are not comparable)",
    )
    args = parser.parse_args(argv)
    header = ["layers", *(f"{c} ms" for c in COLUMNS), "compat/compile"]
    header += ["format/compile", "warm/compile", "header/compile", "calls/compile"]
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for layers in args.layers:
            m = measure(layers, args.samples, directory, warm_up=not args.quick)
            row = [str(layers), *(f"{m[c]:.1f}" for c in COLUMNS)]
            ratios = ("compat", "format", "warm", "header", "calls")
            row += [f"{m[p] / m['compile']:.2f}" for p in ratios]
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
