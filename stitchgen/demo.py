"""A small llama-style decoder, traced and split at its attention op.

Used by ``stitchgen demo`` and by the test corpus. Importing this module
defines the custom op ``stitchgen_demo::attention`` (the split point, as
vLLM's ``unified_attention`` is).
"""

from __future__ import annotations

import math
import statistics
import timeit
from collections.abc import Callable
from typing import Any

import torch
import torch.fx as fx
from torch.fx.experimental.proxy_tensor import make_fx

__all__ = ["attention", "decoder", "instant_pieces", "run_demo", "side_by_side", "split_decoder"]


@torch.library.custom_op("stitchgen_demo::attention", mutates_args=())
def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Causal single-head attention over ``[tokens, dim]`` tensors."""
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    mask = torch.ones(scores.shape[-2:], dtype=torch.bool, device=q.device).tril()
    return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1) @ v


@attention.register_fake
def _(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(q)


def decoder(n_layers: int, hidden: int = 16) -> Callable[..., torch.Tensor]:
    """``f(x, positions, *weights)``: weights are inputs, as Dynamo lifts
    parameters to placeholders. Per layer: rms_norm, qkv projection, split,
    attention, output projection and residual, then a SiLU MLP."""

    def f(x: torch.Tensor, positions: torch.Tensor, *weights: torch.Tensor) -> torch.Tensor:
        for i in range(n_layers):
            w_qkv, w_o, w_up, w_down = weights[4 * i : 4 * i + 4]
            h = torch.nn.functional.rms_norm(x, (hidden,))
            q, k, v = (h @ w_qkv).split(hidden, dim=-1)
            a = torch.ops.stitchgen_demo.attention(q + positions, k, v)
            x = x + a @ w_o
            h = torch.nn.functional.rms_norm(x, (hidden,))
            x = x + torch.nn.functional.silu(h @ w_up) @ w_down
        return x

    return f


def decoder_inputs(
    n_layers: int, hidden: int = 16, tokens: int = 8, device: str = "cpu", seed: int = 0
) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)

    def randn(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, generator=g) / math.sqrt(shape[0])).to(device)

    weights = []
    for _ in range(n_layers):
        weights += [randn(hidden, 3 * hidden), randn(hidden, hidden)]
        weights += [randn(hidden, 4 * hidden), randn(4 * hidden, hidden)]
    return (randn(tokens, hidden), randn(tokens, hidden), *weights)


def split_decoder(
    n_layers: int, hidden: int = 16, tokens: int = 8, device: str = "cpu"
) -> tuple[fx.GraphModule, tuple[torch.Tensor, ...]]:
    """The decoder traced with ``make_fx`` and split at attention: a
    stitching graph of ``2 * n_layers + 1`` inlined pieces."""
    from .split import split_graph

    if not isinstance(n_layers, int) or n_layers < 1:
        raise ValueError(f"n_layers must be a positive integer, not {n_layers!r}")
    inputs = decoder_inputs(n_layers, hidden, tokens, device)
    gm = make_fx(decoder(n_layers, hidden))(*inputs)
    return split_graph(gm, ["stitchgen_demo::attention"]), inputs


def side_by_side(
    gm: fx.GraphModule,
    fn: Callable[..., Any],
    inputs: tuple[torch.Tensor, ...],
    number: int = 5,
    rounds: int = 201,
) -> tuple[float, float]:
    """Seconds per call of the GraphModule and of stitchgen's function: the
    median of rounds that alternate between the two, so that other work on
    the machine slows both alike."""
    timers = [timeit.Timer(lambda: gm(*inputs)), timeit.Timer(lambda: fn(*inputs))]
    times: list[list[float]] = [[], []]
    for _ in range(rounds):
        for timer, taken in zip(timers, times, strict=True):
            taken.append(timer.timeit(number) / number)
    return statistics.median(times[0]), statistics.median(times[1])


def run_demo(
    n_layers: int = 2, print_fn: Callable[[str], Any] = print, templates: Any = None
) -> bool:
    """Trace, split, generate, check and time; returns whether outputs match."""
    from .loading import load
    from .pipeline import generate

    split_gm, inputs = split_decoder(n_layers)
    generated = generate(split_gm, templates=templates)
    print_fn(generated.code)
    fn = load(generated)
    expected = split_gm(*inputs)
    equal = torch.equal(fn(*inputs), expected)
    print_fn(f"outputs equal to the GraphModule: {equal}")
    t_gm, t_fn = side_by_side(split_gm, fn, inputs)
    print_fn(
        f"per call ({n_layers} layers, {len(list(split_gm.children()))} pieces): "
        f"GraphModule {t_gm * 1e6:.1f} us, stitchgen {t_fn * 1e6:.1f} us "
        f"({t_gm / t_fn:.2f}x)"
    )
    # the stitching alone: pieces (and attention) that return at once, both ways
    stub_gm = instant_pieces(split_gm, inputs)
    o_gm, o_fn = side_by_side(stub_gm, load(generate(stub_gm, templates=templates)), inputs)
    print_fn(
        f"overhead (the stitching alone, pieces that return at once): GraphModule "
        f"{o_gm * 1e6:.1f} us, stitchgen {o_fn * 1e6:.1f} us ({o_gm / o_fn:.2f}x); per layer "
        f"{o_gm / n_layers * 1e6:.1f} us against {o_fn / n_layers * 1e6:.1f} us"
    )
    return equal


class _Instant(torch.nn.Module):
    """A piece that returns at once: the outputs the real piece gave."""

    def __init__(self, outputs: Any) -> None:
        super().__init__()
        self.outputs = outputs

    def forward(self, *args: Any) -> Any:
        return self.outputs


def _attention_at_once(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return q


def instant_pieces(split_gm: fx.GraphModule, inputs: tuple[torch.Tensor, ...]) -> fx.GraphModule:
    """``split_gm`` with every piece replaced by one that returns at once
    (what the real piece returned on ``inputs``) and attention by a call
    that returns its first input: what is left to time is the stitching."""
    outputs: dict[str, Any] = {}

    class Recorder(fx.Interpreter):
        def call_module(self, target: Any, args: Any, kwargs: Any) -> Any:
            outputs[target] = super().call_module(target, args, kwargs)
            return outputs[target]

    Recorder(split_gm).run(*inputs)
    graph = fx.Graph()
    graph.output(graph.graph_copy(split_gm.graph, {}))
    for node in graph.nodes:
        if node.op == "call_function" and node.target is torch.ops.stitchgen_demo.attention.default:
            node.target = _attention_at_once
    stubs = {name: _Instant(outputs[name]) for name, _ in split_gm.named_children()}
    return fx.GraphModule(stubs, graph)
