"""One rank of the 2-process collectives test (run by tests/e2e/test_collectives.py).

A stitching graph with functional collectives between pieces — all_reduce +
wait_tensor, all_gather_into_tensor + wait_tensor — compiled by stitchgen and
checked against the GraphModule on this rank. Exit status 0 means equal.
"""

import operator
import sys

import torch
import torch.distributed as dist
import torch.fx as fx

import stitchgen

C10D = torch.ops._c10d_functional


def piece(build):
    graph = fx.Graph()
    graph.output(build(graph))
    return fx.GraphModule({}, graph)


def stitching_graph(group_name: str, world: int) -> fx.GraphModule:
    first = piece(lambda g: (g.call_function(torch.mul, (g.placeholder("x"), 2.0)),))
    second = piece(lambda g: (g.call_function(torch.add, (g.placeholder("y"), 1.0)),))
    graph = fx.Graph()
    x = graph.placeholder("x")
    a = graph.call_function(operator.getitem, (graph.call_module("submod_0", (x,)), 0))
    reduced = graph.call_function(C10D.all_reduce.default, (a, "sum", group_name))
    reduced = graph.call_function(C10D.wait_tensor.default, (reduced,))
    b = graph.call_function(operator.getitem, (graph.call_module("submod_1", (reduced,)), 0))
    gathered = graph.call_function(C10D.all_gather_into_tensor.default, (b, world, group_name))
    gathered = graph.call_function(C10D.wait_tensor.default, (gathered,))
    graph.output((gathered, reduced))
    return fx.GraphModule({"submod_0": first, "submod_1": second}, graph)


def main() -> int:
    rank, world, store_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    dist.init_process_group("gloo", init_method=f"file://{store_path}", rank=rank, world_size=world)
    try:
        gm = stitching_graph(dist.group.WORLD.group_name, world)
        x = torch.arange(4.0) + 10 * rank
        expected = gm(x.clone())
        fn = stitchgen.compile(gm)
        actual = fn(x.clone())
        total = sum(torch.arange(4.0) * 2 + 20 * r for r in range(world))
        ok = (
            all(torch.equal(a, e) for a, e in zip(actual, expected, strict=True))
            and torch.equal(actual[1], total)
            and torch.equal(actual[0], torch.cat([total + 1] * world))
        )
        print(f"rank {rank}: {'equal' if ok else 'DIFFERENT'}", flush=True)
        return 0 if ok else 1
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
