import atexit
import os
import shutil
import tempfile

import pytest
import torch

# pytest's own fixture for running pytest (tests/test_pytest_plugin.py)
pytest_plugins = ["pytester"]

# every pass's output is checked by ir.verify throughout the suite
os.environ.setdefault("STITCHGEN_VERIFY", "1")
# compiled templates go to a folder of the suite's own, not the user's cache
_CACHE = tempfile.mkdtemp(prefix="stitchgen-test-cache-")
atexit.register(shutil.rmtree, _CACHE, True)
os.environ.setdefault("STITCHGEN_CACHE_DIR", _CACHE)
if os.environ.get("PYTEST_XDIST_WORKER"):
    # one process per core already (pytest -n): torch's own threads on top
    # would contend for the same cores (the demo's timings took 3x longer).
    # The interpreters a test starts inherit the setting.
    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA: torch.cuda.is_available() is False")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
