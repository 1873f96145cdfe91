"""stitchgen's benchmark suite: ratios side by side, one process.

    python benchmarks/bench.py [--layers 8 32 80 200] [--quick] [--markdown]
    nox -s bench

On split decoders (``stitchgen.demo.split_decoder``) of each size:

* opaque: per-call stitching overhead with trivial pieces (each returns a
  recorded output), so only stitching is timed — stitchgen vs
  ``GraphModule.__call__`` vs ``fx.Interpreter`` vs a hand-written ideal
  (straight-line statements, pieces in closure cells, written here from the
  graph independently of stitchgen);
* inlined: per-call time with the GraphModule pieces running real aten ops —
  stitchgen (pieces inlined) vs ``GraphModule.__call__``,
  ``templates="profiled"`` with no profiler running vs stitchgen, and a
  downstream project's templates (the header block overridden) vs stitchgen;
* cold: generate + compile time by stage (lower, render without and with
  black's layout, load), uncached, in this process, and black itself on the
  source (what user templates pay);
* fresh: the cold start a serving process meets — fresh processes, graphs no
  cache has seen — for the first compile, a second new graph and a third by
  stage, beside a string-concatenation codegen written here (the baseline,
  no IR, no templates) and beside ``compile()`` of our own source (the floor);
* memory: peak bytes of live tensors during one call (a dispatch-mode
  tracker), stitchgen vs the boxed-inputs convention (inputs in a list the
  function clears) vs the same code with its ``del`` lines removed;
* control flow: per call on small graphs (4-element tensors) holding a
  ``torch.cond`` (``torch.export``), a ``while_loop`` and a
  ``nested_compile_region`` called three times (Dynamo's
  ``invoke_subgraph``): stitchgen (lowered as ``if``, ``while`` and one
  function) vs ``GraphModule.__call__`` (the operators, their subgraphs
  called as modules) vs the same work written by hand as plain Python;
* exported: a 4-layer Llama from ``transformers`` exported with
  ``torch.export``, per call: ``compile(ep)`` (export's checks as code) vs
  ``ep.module()``, and ``compile(ep.module())`` (its check child bound)
  beside; and the cold load of a 24-layer one in fresh processes, from
  after ``import torch`` and ``transformers``: ``torch.export.load(...)
  .module()`` vs the artifact (``stitchgen.load_artifact``).

Times are medians over interleaved rounds; the machines are noisy, so read
ratios, not absolute numbers. Nothing here asserts: it measures.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import operator
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
import weakref
from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx
from torch.utils._python_dispatch import TorchDispatchMode

import stitchgen
from stitchgen import formatting, loading
from stitchgen.demo import split_decoder


def interleaved(fns: dict[str, Callable[[], Any]], number: int, rounds: int) -> dict[str, float]:
    """Median per-call seconds for each fn, the rounds interleaved."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            times[name].append(timeit.timeit(fn, number=number) / number)
    return {k: statistics.median(v) for k, v in times.items()}


def median_time(fn: Callable[[], Any], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


# -- opaque pieces -------------------------------------------------------------


def opaque_setup(layers: int) -> tuple[fx.GraphModule, tuple[Any, ...], dict[str, Any]]:
    """The split decoder whose pieces are replaced by trivial callables that
    return what the real piece returned (bound into ``__dict__`` as a compiler
    binds compiled pieces, so GraphModule.__call__ uses them too)."""
    gm, inputs = split_decoder(layers)
    recorded: dict[str, Any] = {}
    for name, child in list(gm.named_children()):

        def record(*args: Any, _name: str = name, _child: Any = child) -> Any:
            recorded[_name] = _child(*args)
            return recorded[_name]

        gm.__dict__[name] = record
    gm(*inputs)
    trivial = {name: (lambda *a, _out=out: _out) for name, out in recorded.items()}
    gm.__dict__.update(trivial)
    return gm, inputs, trivial


def hand_written(gm: fx.GraphModule, pieces: dict[str, Any]) -> Callable[..., Any]:
    """The ideal: straight-line statements, a del after each last use,
    pieces in closure cells — written from the graph, not by stitchgen."""
    nodes = list(gm.graph.nodes)
    last: dict[str, int] = {}
    for i, node in enumerate(nodes):
        for arg in node.all_input_nodes:
            last[arg.name] = i
    names = [n for n in pieces]
    params = [n.name for n in nodes if n.op == "placeholder"]
    body = []
    for i, node in enumerate(nodes):
        if node.op == "call_module":
            args = ", ".join(a.name for a in node.args)
            body.append(f"{node.name} = p_{node.target}({args})")
        elif node.op == "call_function":
            body.append(f"{node.name} = {node.args[0].name}[{node.args[1]}]")
        elif node.op == "output":
            body.append(f"return {node.args[0].name}")
            continue
        dead = [n for n, at in last.items() if at == i]
        if dead:
            body.append("del " + ", ".join(dead))
    cells = ", ".join(f"p_{n}" for n in names)
    source = f"def make({cells}):\n    def fn({', '.join(params)}):\n"
    source += "".join(f"        {line}\n" for line in body) + "    return fn\n"
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    return namespace["make"](*[pieces[n] for n in names])


def bench_opaque(layers: int, rounds: int, number: int | None = None) -> dict[str, float]:
    """Per-call seconds; ``number`` calls per round (default: 40,000 per layer count)."""
    gm, inputs, trivial = opaque_setup(layers)
    ours = stitchgen.compile(gm, trivial)
    ideal = hand_written(gm, trivial)
    interp = fx.Interpreter(gm)
    expected = gm(*inputs)
    for fn in (ours, ideal):
        assert torch.equal(fn(*inputs), expected)
    t = interleaved(
        {
            "ours": lambda: ours(*inputs),
            "ideal": lambda: ideal(*inputs),
            "graphmodule": lambda: gm(*inputs),
            "interpreter": lambda: interp.run(*inputs),
        },
        number=number or max(100, 40000 // layers),
        rounds=rounds,
    )
    return t


# -- inlined pieces ------------------------------------------------------------


#: a downstream project's one-block override (the header)
HEADER_OVERRIDE = (
    '{% extends "stitchgen/module.py.j2" %}\n'
    "{% block header %}\n# acme: generated\n{{ super() -}}\n{% endblock %}\n"
)


def bench_inlined(layers: int, rounds: int, device: str = "cpu") -> dict[str, float]:
    gm, inputs = split_decoder(layers, device=device)
    ours = stitchgen.compile(gm)
    profiled = stitchgen.compile(gm, templates="profiled")  # timed with no profiler on
    with tempfile.TemporaryDirectory() as directory:
        with open(os.path.join(directory, "module.py.j2"), "w") as f:
            f.write(HEADER_OVERRIDE)
        override = stitchgen.compile(gm, templates=stitchgen.Templates(directory))
    assert torch.equal(override(*inputs), gm(*inputs))
    assert torch.equal(ours(*inputs), gm(*inputs))
    assert torch.equal(profiled(*inputs), gm(*inputs))
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    def timed(fn: Callable[..., Any]) -> Callable[[], Any]:
        return lambda: (fn(*inputs), sync())

    return interleaved(
        {
            "ours": timed(ours),
            "profiled": timed(profiled),
            "override": timed(override),
            "graphmodule": timed(gm),
        },
        number=max(2, 400 // layers),
        rounds=rounds,
    )


# -- cold path -----------------------------------------------------------------


def bench_cold(layers: int, rounds: int) -> dict[str, float]:
    """In this (warm) process: each stage on the same graph, uncached."""
    gm, _ = split_decoder(layers)
    program = stitchgen.lower(gm)
    generated = stitchgen.generate(gm, format=False)

    def fresh_load() -> Any:
        loading.clear_compile_cache()
        return stitchgen.load(generated)

    def fresh_black() -> str:
        formatting.format_source.cache_clear()
        return formatting.format_source(generated.code)

    out = {
        "lower": median_time(lambda: stitchgen.lower(gm), rounds),
        "render": median_time(lambda: stitchgen.render(program, format=False), rounds),
        "render_black": median_time(lambda: stitchgen.render(program, format=True), rounds),
        "load": median_time(fresh_load, rounds),
        "black": median_time(fresh_black, max(1, rounds // 3)),
    }
    out["compile"] = out["lower"] + out["render"] + out["load"]
    return out


# -- cold start in fresh processes -------------------------------------------------

#: one fresh process: build three new decoders, then time the first compile,
#: a second new graph, and a third by stage (what a serving process pays once
#: per model: no cache has seen these graphs, nothing is warmed up)
FRESH_CHILD = r"""
import json, sys, time
impl, layers = sys.argv[1], int(sys.argv[2])
sys.path.insert(0, sys.argv[3])
from stitchgen.demo import split_decoder
graphs = [split_decoder(layers + i)[0] for i in range(3)]
out = {}
if impl == "concat":
    from bench import concat_codegen, concat_load
    for tag, g in zip(("first", "second"), graphs):
        t0 = time.perf_counter()
        code, names, consts = concat_codegen(g)
        t1 = time.perf_counter()
        concat_load(code, names, consts, dict(g.named_children()))
        out[tag], out[tag + "_generate"] = time.perf_counter() - t0, t1 - t0
    t0 = time.perf_counter()
    compile(concat_codegen(graphs[2])[0], "<floor>", "exec")
    out["floor"] = time.perf_counter() - t0
else:
    import stitchgen
    from stitchgen.pipeline import paused
    fmt = impl == "black"
    for tag, g in zip(("first", "second"), graphs):
        t0 = time.perf_counter()
        stitchgen.compile(g, format=fmt)
        out[tag] = time.perf_counter() - t0
    with paused():  # as compile() runs them
        t0 = time.perf_counter()
        program = stitchgen.lower(graphs[2])
        t1 = time.perf_counter()
        code = stitchgen.render(program, format=fmt)
        t2 = time.perf_counter()
        compile(code, "<floor>", "exec")
        t3 = time.perf_counter()
    out["lower"], out["render"], out["floor"] = t1 - t0, t2 - t1, t3 - t2
print(json.dumps(out))
"""


def bench_fresh(layers: int, samples: int) -> dict[str, dict[str, float]]:
    """Medians over ``samples`` fresh processes per implementation, interleaved."""
    here = os.path.dirname(os.path.abspath(__file__))
    runs: dict[str, list[dict[str, float]]] = {"concat": [], "ours": [], "black": []}
    for _ in range(samples):
        for impl, got in runs.items():
            proc = subprocess.run(
                [sys.executable, "-c", FRESH_CHILD, impl, str(layers), here],
                capture_output=True,
                text=True,
                check=True,
            )
            got.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    return {
        impl: {key: statistics.median(r[key] for r in got) for key in got[0]}
        for impl, got in runs.items()
    }


def concat_codegen(gm: fx.GraphModule) -> tuple[str, list[str], list[Any]]:
    """The baseline: a stitching-graph codegen in the string-concatenation
    style (no IR, no templates), written here for comparison. GraphModule
    children become module-level functions, other children are called from a
    list, non-primitive constants are read from a list; a ``del`` follows
    each value's last use. It handles the decoder's shapes, nothing more."""
    consts: list[Any] = []
    seen: dict[int, int] = {}
    names: list[str] = []
    defs: list[str] = []

    def ref(a: Any) -> str:
        if isinstance(a, fx.Node):
            return a.name
        if isinstance(a, (list, tuple)):
            inner = ", ".join(ref(x) for x in a)
            return f"[{inner}]" if isinstance(a, list) else f"({inner}{',' if len(a) == 1 else ''})"
        if a is None or isinstance(a, (bool, int, float, str)):
            return repr(a)
        if id(a) not in seen:
            seen[id(a)] = len(consts)
            consts.append(a)
        return f"CONSTS[{seen[id(a)]}]"

    def function(g: fx.GraphModule, fn_name: str, extra: str) -> str:
        nodes = list(g.graph.nodes)
        last = {}
        for i, node in enumerate(nodes):
            for used in node.all_input_nodes:
                last[used] = i
        dies: dict[int, list[str]] = {}
        for value, at in last.items():
            dies.setdefault(at, []).append(value.name)
        params, lines = [], []
        for i, node in enumerate(nodes):
            args = ", ".join(
                [ref(a) for a in node.args] + [f"{k}={ref(v)}" for k, v in node.kwargs.items()]
            )
            if node.op == "placeholder":
                params.append(node.name)
            elif node.op == "output":
                lines.append(f"    return {ref(node.args[0])}")
                break
            elif node.op == "call_module":
                child = getattr(g, str(node.target))
                if isinstance(child, fx.GraphModule):
                    callee = f"inlined_{len(defs)}"
                    defs.append(function(child, callee, ""))
                else:
                    callee = f"SUBMODS[{len(names)}]"
                    names.append(str(node.target))
                lines.append(f"    {node.name} = {callee}({args})")
            elif node.target is operator.getitem:
                lines.append(f"    {node.name} = {ref(node.args[0])}[{ref(node.args[1])}]")
            else:
                target = torch.fx.node._get_qualified_name(node.target)
                lines.append(f"    {node.name} = {target}({args})")
            if i in dies:
                lines.append(f"    del {', '.join(sorted(dies[i]))}")
        return f"def {fn_name}({', '.join(params)}{extra}):\n" + "\n".join(lines) + "\n"

    entry = function(gm, "execution_fn", "")
    return "import torch\nimport operator\n\n" + "\n".join(defs) + "\n" + entry, names, consts


def concat_load(
    code: str, names: list[str], consts: list[Any], children: dict[str, Any]
) -> Callable[..., Any]:
    namespace: dict[str, Any] = {"CONSTS": consts, "SUBMODS": [children[n] for n in names]}
    exec(compile(code, "<concat>", "exec"), namespace)
    return namespace["execution_fn"]


# -- memory --------------------------------------------------------------------


class LiveBytes(TorchDispatchMode):
    """Peak bytes of tensors alive (made by ops in this mode, or inputs)."""

    def __init__(self, inputs: tuple[Any, ...]) -> None:
        super().__init__()
        self.live = 0
        self.peak = 0
        for t in inputs:
            if isinstance(t, torch.Tensor):
                self._track(t)

    def _track(self, t: torch.Tensor) -> None:
        size = t.untyped_storage().nbytes()
        self.live += size
        self.peak = max(self.peak, self.live)
        weakref.finalize(t, self._free, size)  # views are not tracked: the base holds it

    def _free(self, size: int) -> None:
        self.live -= size

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor) and t._base is None:
                self._track(t)
        return out


def bench_memory(layers: int) -> dict[str, float]:
    gm, inputs = split_decoder(layers, tokens=64)
    generated = stitchgen.generate(gm, format=False)
    no_dels = "\n".join(
        line for line in generated.code.splitlines() if not line.lstrip().startswith("del ")
    )
    without = stitchgen.load(dataclasses.replace(generated, code=no_dels))
    ours = stitchgen.load(generated)
    boxed = stitchgen.compile(gm, boxed=True)
    out = {}
    for name, fn in (("ours", ours), ("no_dels", without), ("boxed", boxed)):
        args = [t.clone() for t in inputs]
        with LiveBytes(tuple(args)) as tracker:
            result = fn(args) if name == "boxed" else fn(*args)
        del result
        out[name] = float(tracker.peak)
    return out


# -- report ----------------------------------------------------------------------


# -- control flow ---------------------------------------------------------------


class _Cond(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        def positive(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor]:
            return (a.sin() + b,)

        def negative(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor]:
            return (a.cos() - b,)

        r = torch.relu(x)
        return torch.cond(r.sum() > 0, positive, negative, (r, y))[0] * 2


def _cond_by_hand(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    r = torch.relu(x)
    return (r.sin() + y if r.sum() > 0 else r.cos() - y) * 2


class _Loop(torch.nn.Module):
    def forward(self, i: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        from torch._higher_order_ops.while_loop import while_loop

        def test(i: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            return i < 3

        def step(i: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return (i + 1, x * 2)

        return tuple(while_loop(test, step, (i, x)))


def _loop_by_hand(i: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    while i < 3:
        i, x = i + 1, x * 2
    return (i, x)


def _region_model() -> tuple[torch.nn.Module, Callable[..., Any]] | None:
    region = getattr(torch.compiler, "nested_compile_region", None)
    if region is None:
        return None

    def block(x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x) * 2

    compiled = region(block)

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return compiled(compiled(compiled(x)))

    return Model(), lambda x: block(block(block(x)))


def _dynamo_graph(model: torch.nn.Module, *args: Any) -> tuple[fx.GraphModule, list[Any]]:
    captured: list[tuple[fx.GraphModule, list[Any]]] = []

    def backend(gm: fx.GraphModule, example: list[Any]) -> Callable[..., Any]:
        captured.append((gm, list(example)))
        return gm.forward

    torch._dynamo.reset()
    torch.compile(model, backend=backend)(*args)
    return captured[0]


def bench_control_flow(rounds: int) -> dict[str, dict[str, float]]:
    """Per-call seconds on each control-flow graph: ``graphmodule``,
    ``ours`` and ``by_hand`` (the same work as plain Python)."""
    x, y = torch.randn(4), torch.randn(4)
    graphs: dict[str, tuple[Any, tuple[Any, ...], Callable[..., Any]]] = {
        "cond": (torch.export.export(_Cond(), (x, y)).module(), (x, y), _cond_by_hand),
        "while_loop": (
            torch.export.export(_Loop(), (torch.tensor(0), x)).module(),
            (torch.tensor(0), x),
            _loop_by_hand,
        ),
    }
    region = _region_model()
    if region is not None:
        gm, example = _dynamo_graph(region[0], x)
        graphs["invoke_subgraph"] = (gm, tuple(example), lambda *a: region[1](a[-1]))
    out = {}
    for name, (gm, inputs, by_hand) in graphs.items():
        ours = stitchgen.compile(gm)
        out[name] = interleaved(
            {
                "graphmodule": lambda gm=gm, a=inputs: gm(*a),
                "ours": lambda fn=ours, a=inputs: fn(*a),
                "by_hand": lambda fn=by_hand, a=inputs: fn(*a),
            },
            number=300,
            rounds=rounds,
        )
    return out


# -- exported programs ----------------------------------------------------------


def _llama(layers: int) -> tuple[torch.export.ExportedProgram, torch.Tensor]:
    """A small Llama from ``transformers`` (hidden 64, a sequence of 8,
    ``use_cache=False``, random weights), exported."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        use_cache=False,
    )
    torch.manual_seed(0)
    ids = torch.randint(0, 128, (1, 8))
    return torch.export.export(LlamaForCausalLM(config).eval(), (ids,)), ids


def bench_exported(layers: int, rounds: int) -> dict[str, float]:
    """Per-call seconds on an exported Llama, under ``no_grad``:
    ``module`` (``ep.module()``), ``ours`` (``compile(ep)``: the checks as
    code) and ``bound`` (``compile(ep.module())``: its check child bound)."""
    ep, ids = _llama(layers)
    module, ours, bound = ep.module(), stitchgen.compile(ep), stitchgen.compile(ep.module())
    with torch.no_grad():
        return interleaved(
            {"module": lambda: module(ids), "ours": lambda: ours(ids), "bound": lambda: bound(ids)},
            number=20,
            rounds=rounds,
        )


_COLD_LOAD = """
import sys, time, torch, transformers.modeling_outputs
start = time.perf_counter()
if sys.argv[1] == "export":
    fn = torch.export.load(sys.argv[2]).module()
else:
    import stitchgen
    fn = stitchgen.load_artifact(sys.argv[2])
print(time.perf_counter() - start)
"""


def bench_exported_cold(layers: int, samples: int) -> dict[str, float]:
    """Median seconds to load an exported Llama in a fresh process, from
    after ``import torch`` and ``transformers``: ``export``
    (``torch.export.load(...).module()``) and ``ours`` (the artifact)."""
    ep, _ = _llama(layers)
    out: dict[str, list[float]] = {"export": [], "ours": []}
    with tempfile.TemporaryDirectory() as tmp:
        program, artifact = os.path.join(tmp, "llama.pt2"), os.path.join(tmp, "artifact")
        torch.export.save(ep, program)
        stitchgen.generate(ep, format=False).save(artifact)
        for _ in range(samples):
            for kind, path in (("export", program), ("ours", artifact)):
                run = [sys.executable, "-c", _COLD_LOAD, kind, path]
                done = subprocess.run(run, capture_output=True, text=True, check=True)
                out[kind].append(float(done.stdout.split()[-1]))
    return {kind: statistics.median(times) for kind, times in out.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[8, 32, 80, 200])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--fresh", type=int, default=5, help="fresh processes per cold row")
    parser.add_argument("--quick", action="store_true", help="few rounds and calls (a smoke run)")
    parser.add_argument("--markdown", action="store_true", help="print markdown tables")
    parser.add_argument(
        "--device", default="cpu", help="cuda: only the per-call rows with CUDA pieces"
    )
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else args.rounds
    if args.device != "cpu":
        print("layers  device  ours us  graphmodule us  gm/ours  profiled/ours")
        for layers in args.layers:
            t = bench_inlined(layers, rounds, args.device)
            print(
                f"{layers}  {args.device}  {t['ours'] * 1e6:.1f}  {t['graphmodule'] * 1e6:.1f}  "
                f"{t['graphmodule'] / t['ours']:.2f}x  {t['profiled'] / t['ours']:.3f}"
            )
        return
    rows = []
    for layers in args.layers:
        o = bench_opaque(layers, rounds, 200 if args.quick else None)
        i = bench_inlined(layers, max(3, rounds // 2))
        c = bench_cold(layers, max(3, rounds // 2))
        m = bench_memory(min(layers, 8))
        rows.append((layers, o, i, c, m))
    sep = " | " if args.markdown else "  "

    def line(cells: list[str]) -> str:
        text = sep.join(cells)
        return f"| {text} |" if args.markdown else text

    header = [
        "layers", "opaque us", "ours/ideal", "gm/ours", "interp/ours",
        "inlined gm/ours", "profiled/ours", "override/ours", "lower ms",
        "render ms",
        "render+black ms", "load ms", "compile ms", "black itself ms",
        "peak MB ours/boxed/no-dels",
    ]  # fmt: skip
    print(line(header))
    if args.markdown:
        print(line(["---"] * len(header)))
    for layers, o, i, c, m in rows:
        print(
            line(
                [
                    str(layers),
                    f"{o['ours'] * 1e6:.1f}",
                    f"{o['ours'] / o['ideal']:.3f}",
                    f"{o['graphmodule'] / o['ours']:.2f}x",
                    f"{o['interpreter'] / o['ours']:.0f}x",
                    f"{i['graphmodule'] / i['ours']:.2f}x",
                    f"{i['profiled'] / i['ours']:.3f}",
                    f"{i['override'] / i['ours']:.3f}",
                    f"{c['lower'] * 1e3:.1f}",
                    f"{c['render'] * 1e3:.1f}",
                    f"{c['render_black'] * 1e3:.1f}",
                    f"{c['load'] * 1e3:.1f}",
                    f"{c['compile'] * 1e3:.1f}",
                    f"{c['black'] * 1e3:.0f}",
                    f"{m['ours'] / 2**20:.2f}/{m['boxed'] / 2**20:.2f}/{m['no_dels'] / 2**20:.2f}",
                ]
            )
        )
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        growth = last[3]["compile"] / first[3]["compile"]
        print(
            f"cold compile growth {first[0]} -> {last[0]} layers: {growth:.1f}x "
            f"for {last[0] / first[0]:.0f}x the layers"
        )
    print()
    flows = bench_control_flow(rounds)
    flow_header = ["control flow", "gm us", "ours us", "by hand us", "ours/gm", "ours/by hand"]
    print(line(flow_header))
    if args.markdown:
        print(line(["---"] * len(flow_header)))
    for name, t in flows.items():
        cells = [f"{t[k] * 1e6:.1f}" for k in ("graphmodule", "ours", "by_hand")]
        ratios = [f"{t['ours'] / t['graphmodule']:.2f}", f"{t['ours'] / t['by_hand']:.2f}"]
        print(line([name, *cells, *ratios]))
    print()
    e = bench_exported(4, rounds)
    print(
        f"exported llama, 4 layers, per call: ep.module() {e['module'] * 1e6:.0f} us, "
        f"compile(ep) {e['ours'] * 1e6:.0f} us: {e['ours'] / e['module']:.2f}x "
        f"(compile(ep.module()), its check child bound: {e['bound'] / e['module']:.2f}x)"
    )
    cold_layers = 4 if args.quick else 24
    k = bench_exported_cold(cold_layers, 1 if args.quick else args.fresh)
    print(
        f"exported llama, {cold_layers} layers, cold load in a fresh process: "
        f"torch.export.load(...).module() {k['export'] * 1e3:.0f} ms, the artifact "
        f"{k['ours'] * 1e3:.0f} ms: {k['export'] / k['ours']:.1f}x faster"
    )
    print()
    fresh_header = [
        "layers", "concat first ms", "ours first ms", "ours/concat", "ours second ms",
        "ours/concat 2nd", "black first ms", "black/ours", "lower ms", "render ms",
        "compile() ms", "ours/compile()",
    ]  # fmt: skip
    print(line(fresh_header))
    if args.markdown:
        print(line(["---"] * len(fresh_header)))
    for layers in args.layers[:1] if args.quick else args.layers:
        f = bench_fresh(layers, 1 if args.quick else args.fresh)
        b, o, k = f["concat"], f["ours"], f["black"]
        print(
            line(
                [
                    str(layers),
                    f"{b['first'] * 1e3:.1f}",
                    f"{o['first'] * 1e3:.1f}",
                    f"{o['first'] / b['first']:.2f}",
                    f"{o['second'] * 1e3:.1f}",
                    f"{o['second'] / b['second']:.2f}",
                    f"{k['first'] * 1e3:.1f}",
                    f"{k['first'] / o['first']:.2f}",
                    f"{o['lower'] * 1e3:.1f}",
                    f"{o['render'] * 1e3:.1f}",
                    f"{o['floor'] * 1e3:.1f}",
                    f"{o['first'] / o['floor']:.2f}",
                ]
            )
        )


if __name__ == "__main__":
    main()
