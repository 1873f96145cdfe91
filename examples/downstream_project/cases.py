"""acme's golden cases: each a function taking no arguments that returns a
GraphModule (stitchgen golden --cases cases.py --dir golden ...)."""

import torch
import torch.fx as fx


def double():
    return fx.symbolic_trace(lambda x: x * 2)


def relu_plus_one():
    return fx.symbolic_trace(lambda x: torch.relu(x) + 1)


CASES = {"double": double, "relu_plus_one": relu_plus_one}
SMALL = {"double": double}
