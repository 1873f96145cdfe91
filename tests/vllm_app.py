"""A vLLM process in miniature, for tests/e2e/test_inside_vllm.py: run as a
script in a fresh process, it loads the general plugins through vLLM's own
``load_general_plugins()``, compiles a small model through vLLM's real
``VllmBackend`` on the CPU, runs it on several inputs and reports, as one
JSON line, whose code ran and what the plugin logged.

    python tests/vllm_app.py '{"out": "outputs.pt", "sizes": [4, 7], ...}'

``python tests/vllm_app.py --serve`` is the same process, many times over
(tests/vllm_runner.py): it imports what the script imports at its top
(torch and vLLM's modules: seconds), then, for each request on stdin, forks
a child that runs ``main`` as the script would: with the request's
environment, its stdout and stderr in the request's files, and the exit
status a script has. The child is a fresh vLLM process in what matters
here: no plugin loaded, no stitchgen imported, nothing compiled (the
server has asked inductor which vector instructions this CPU builds, an
answer torch keeps per process).

What reaches ``VllmBackend`` on a machine without a GPU: vLLM's CPU platform
is left alone (``VLLM_TARGET_DEVICE`` unset), the device config says cpu,
the backend is ``eager`` (or ``inductor``, ``{"backend": "inductor"}``, with
vLLM's compile cache as vLLM keeps it by default), and attention is a custom
op registered with ``direct_register_custom_op`` and listed in
``splitting_ops``. The report's ``counter`` is vLLM's compilation counter:
what was compiled, saved and loaded from the cache.
"""

from __future__ import annotations

import json
import linecache
import logging
import operator
import os
import signal
import sys
import traceback

import torch
from torch import nn
from vllm.compilation.counter import compilation_counter
from vllm.compilation.decorators import support_torch_compile
from vllm.config import (
    CompilationConfig,
    CompilationMode,
    CUDAGraphMode,
    DeviceConfig,
    PassConfig,
    VllmConfig,
    set_current_vllm_config,
)
from vllm.forward_context import set_forward_context
from vllm.utils.torch_utils import direct_register_custom_op

#: the file of the ``execution_fn`` that called attention, each call
CALLERS: list[str | None] = []


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "execution_fn":
        frame = frame.f_back
    CALLERS.append(frame.f_code.co_filename if frame is not None else None)
    return (q @ k.transpose(-1, -2)).softmax(-1) @ v


def _attention_fake(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(q)


direct_register_custom_op(
    "stitchgen_test_attention", _attention, mutates_args=[], fake_impl=_attention_fake
)


@support_torch_compile(dynamic_arg_dims={"x": 0})
class Model(nn.Module):
    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "", layers: int, width: int):
        super().__init__()
        self.qkv = nn.ModuleList(nn.Linear(width, 3 * width) for _ in range(layers))
        self.out = nn.ModuleList(nn.Linear(width, width) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for qkv, out in zip(self.qkv, self.out, strict=True):
            q, k, v = qkv(x).chunk(3, dim=-1)
            x = x + out(torch.ops.vllm.stitchgen_test_attention(q, k, v)).relu()
        return x * 2


def config(backend: str = "eager") -> VllmConfig:
    return VllmConfig(
        device_config=DeviceConfig(device="cpu"),
        compilation_config=CompilationConfig(
            mode=CompilationMode.VLLM_COMPILE,
            backend=backend,
            splitting_ops=["vllm::stitchgen_test_attention"],
            cudagraph_mode=CUDAGraphMode.NONE,
            compile_sizes=[],
            pass_config=PassConfig(
                fuse_norm_quant=False, fuse_act_quant=False, fuse_rope_kvcache_cat_mla=False
            ),
        ),
    )


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.getMessage()}")


def bindings() -> dict[str, str]:
    """The module of each codegen name vLLM calls."""
    import vllm.compilation.backends as backends
    import vllm.compilation.caching as caching
    import vllm.compilation.codegen as codegen

    found = {}
    for module, names in (
        (codegen, ("generate_execution_code", "generate_execution_code_with_name")),
        (codegen, ("compile_execution_fn",)),
        (backends, ("generate_execution_code", "compile_execution_fn")),
        (caching, ("compile_execution_fn",)),
    ):
        for name in names:
            bound = getattr(module, name, None)
            short = f"{module.__name__.rpartition('.')[2]}.{name}"
            found[short] = "absent" if bound is None else bound.__module__
    return found


def break_api(how: str) -> None:
    """Make this vLLM one the plugin does not know, before it loads."""
    import vllm.compilation.codegen as codegen

    if how == "signature":  # a newer vLLM's loader, say: another parameter, everywhere
        original = codegen.compile_execution_fn

        def compile_execution_fn(code, submod_callables, submod_names, consts=None, *, extra=None):
            return original(code, submod_callables, submod_names, consts)

        codegen.compile_execution_fn = compile_execution_fn  # before backends imports it
    elif how == "moved":  # the warm start no longer imports the loader by name
        import vllm.compilation.caching as caching

        del caching.compile_execution_fn


def rotary_embedding_schema() -> None:
    """The inductor backend's passes name ``torch.ops._C.rotary_embedding``
    (FixFunctionalizationPass), whose library (``vllm._C``) does not load
    without CUDA: its schema alone, never called."""
    torch.library.define(
        "_C::rotary_embedding",
        "(Tensor positions, Tensor(a!) query, Tensor(b!)? key, int head_size, "
        "Tensor cos_sin_cache, bool is_neox) -> ()",
    )


def main(options: dict) -> dict:
    import vllm.compilation.codegen as codegen
    from vllm.plugins import load_general_plugins

    try:
        from vllm.config.logging import LoggingConfig
        from vllm.logger import configure_logging
    except ImportError:  # vLLM 0.22: its logging is configured when vllm.logger is imported
        pass
    else:
        configure_logging(LoggingConfig())  # as each vLLM 0.34 process does first

    # as vLLM wrote them, before any plugin
    vllms_own = codegen.generate_execution_code, codegen.compile_execution_fn
    records = Records()
    logging.getLogger("vllm.stitchgen").addHandler(records)
    if options.get("break"):
        break_api(options["break"])
    before = bindings()
    load_general_plugins()
    if options.get("load_twice"):
        import vllm.plugins

        after_first = bindings()
        vllm.plugins.plugins_loaded = False  # as a second process start would find it
        load_general_plugins()
        assert bindings() == after_first
    backend = options.get("backend", "eager")
    if backend == "inductor":
        rotary_embedding_schema()
    cfg = config(backend)
    torch.manual_seed(options.get("seed", 0))
    with set_current_vllm_config(cfg):
        model = Model(vllm_config=cfg, layers=options["layers"], width=options["width"])
    outputs = []
    with set_current_vllm_config(cfg), set_forward_context(None, vllm_config=cfg):
        for size in options["sizes"]:
            x = torch.randn(size, options["width"], generator=torch.Generator().manual_seed(size))
            outputs.append(model(x))
    torch.save(outputs, options["out"])
    callers = sorted(set(map(str, CALLERS)))
    report = {
        "callers": callers,
        # the source of the code that ran (ours is registered in linecache)
        "sources": ["".join(linecache.getlines(name)) for name in callers],
        "before": before,
        "after": bindings(),
        "log": records.lines,
        # what vLLM compiled, saved and loaded (its compile cache: a warm start loads)
        "counter": {k: v for k, v in vars(compilation_counter).items() if isinstance(v, int)},
    }
    if options.get("warm_start"):
        report["warm_start"] = warm_start(vllms_own)
    return report


def warm_start(vllms_own) -> dict:
    """What a warm start from vLLM's compile cache does with the code in it:
    ``caching.compile_execution_fn`` loads it. The cache keeps vLLM's format
    either way: the loader bound now loads code vLLM's own codegen wrote,
    and vLLM's own loader loads code the generator bound now writes."""
    import torch.fx as fx
    import vllm.compilation.caching as caching
    import vllm.compilation.codegen as codegen

    graph = fx.Graph()
    call = graph.call_module("submod_0", (graph.placeholder("x"),))
    value = graph.call_function(operator.getitem, (call, 0))
    graph.output(graph.call_function(torch.mul, (value, 3.0)))
    split = fx.GraphModule({"submod_0": nn.Tanh()}, graph)
    split.__dict__["submod_0"] = lambda t: (torch.tanh(t),)  # as vLLM binds a compiled piece
    callables = {"submod_0": split.submod_0}
    sample = torch.linspace(-1.0, 1.0, 7)
    expected = torch.tanh(sample) * 3.0
    generate, load = vllms_own
    code, names, consts = generate(split)  # vLLM's code, loaded by the bound loader
    loaded = caching.compile_execution_fn(code, callables, names, consts)
    code, names, consts = codegen.generate_execution_code(split)  # loaded by vLLM's
    theirs = load(code, callables, names, consts)
    return {
        "loader": caching.compile_execution_fn.__module__,
        "generator": codegen.generate_execution_code.__module__,
        "loads_vllms_code": bool(torch.equal(loaded(sample), expected)),
        "vllm_loads_its_code": bool(torch.equal(theirs(sample), expected)),
    }


#: how the server marks its answers (vLLM may log on its stdout too)
ANSWER = "@@vllm_app "
#: how long one run may take before it is killed (a script's runner would time it out)
RUN_LIMIT_S = 600


def _run_forked(request: dict) -> None:
    """In the forked child: the script's run, then exit; never returns."""
    code = 1
    try:
        os.environ.clear()
        os.environ.update(request["env"])
        signal.alarm(RUN_LIMIT_S)
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(target, fd)
            os.close(target)
        print(json.dumps(main(request["options"])))
        code = 0
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _ask_inductor_the_cpu() -> None:
    """Which vector instruction sets inductor's C++ builds on this CPU: torch
    asks once per process (six compiles, and as many interpreters that load
    them: 7-15 s here) and keeps the answer, which the children inherit."""
    try:
        from torch._inductor.cpu_vec_isa import valid_vec_isa_list
    except ImportError:  # a torch that asks elsewhere: each child asks
        return
    valid_vec_isa_list()


def serve() -> None:
    """One forked run per request line on stdin; one answer line each."""
    _ask_inductor_the_cpu()
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()  # nothing buffered here is written twice by the child
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _run_forked(request)
        _, status = os.waitpid(pid, 0)
        answer = {"returncode": os.waitstatus_to_exitcode(status)}
        print(ANSWER + json.dumps(answer), flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
    else:
        print(json.dumps(main(json.loads(sys.argv[1]))))
