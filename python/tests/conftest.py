"""Shared fixtures. The package is imported from the checkout (python/) unless an installed
one comes first on sys.path (tools/test.sh tests the installed package that way too)."""

import os
import sys
from pathlib import Path

import pytest

if os.environ.get("TILEJIT_TEST_INSTALLED") != "1":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tilejit  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def cpu_runtime():
    """A runtime that compiles for sm_90a without a GPU and keeps no module cache on disk."""
    return tilejit.Runtime(arch="sm_90a", cache_dir="")


def pytest_collection_modifyitems(config, items):
    # GPU tests run on the device (python -m pytest -m gpu); elsewhere they are skipped.
    if config.getoption("-m") and "gpu" in config.getoption("-m"):
        return
    skip = pytest.mark.skip(reason="needs a GPU: run with -m gpu on the device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
