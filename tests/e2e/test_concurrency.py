"""Threads: generation is deterministic under concurrency; one function
serves many threads. (The graphs are built first, serially: tracing with
Dynamo or make_fx is not thread-safe; stitchgen is what runs in parallel.)"""

from concurrent.futures import ThreadPoolExecutor

import torch
from golden_cases import CASES
from oracle import assert_runs_same

import stitchgen

NAMES = sorted(CASES)[:8]


def _cases():
    return {name: CASES[name]("cpu") for name in NAMES}


def _code(case):
    return stitchgen.generate(case.gm, opaque=tuple(case.submods)).code


def test_eight_threads_generate_the_same_code_as_serially():
    cases = _cases()
    serial = {name: _code(case) for name, case in cases.items()}
    for _ in range(3):
        with ThreadPoolExecutor(max_workers=8) as pool:
            parallel = dict(zip(NAMES, pool.map(_code, cases.values()), strict=True))
        assert parallel == serial


def test_eight_threads_compile_and_run_different_graphs():
    cases = _cases()

    def run(case):
        fn = stitchgen.compile(case.gm, case.submods)
        assert_runs_same(fn, case.reference, case.inputs, case.gm)
        return True

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(run, cases.values()))


def test_one_function_called_from_eight_threads():
    case = CASES["decoder_4_layers"]("cpu")
    fn = stitchgen.compile(case.gm)

    def call(i):
        inputs = (case.inputs[0] * float(i + 1), *case.inputs[1:])
        return fn(*inputs), case.gm(*inputs)

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(call, range(32)))
    for actual, oracle in results:
        assert torch.equal(actual, oracle)
