"""Run one power-cut workload: ``python powercut_child.py SCENARIO DIR [SOURCE]``.

The scenario records into ``DIR/trace.pkl`` (see :mod:`lossy_vfs`). The
``control-*`` scenarios break one durability rule on purpose.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from lossy_vfs import Recorder
from powercut_sweeps import sweep
from powercut_workloads import batch_threads, batches, group, migrate, mixed, vacuum

SCENARIOS: dict[str, Callable[..., Recorder]] = {
    "mixed": mixed,
    "mixed-normal": lambda root: mixed(root, "normal"),
    "vacuum": vacuum,
    "group": group,
    "sweep": sweep,
    "sweep-pinned": lambda root: sweep(root, "pinned"),
    "sweep-appenders": lambda root: sweep(root, "appenders"),
    "sweep-cli": lambda root: sweep(root, "cli"),
    "sweep-normal-pinned": lambda root: sweep(root, "pinned", durability="normal"),
    "migrate": migrate,
    "batches": batches,
    "batch-threads": batch_threads,
    "control-sync-off": lambda root: mixed(root, sync_off=True),
    "control-early-wake": lambda root: group(root, early_wake=True),
    "control-sweep-no-sync": lambda root: sweep(root, "pinned", no_final_sync=True),
    "control-split-delete": lambda root: sweep(root, "split"),
    "control-split-batch": lambda root: batches(root, split=True),
}


if __name__ == "__main__":
    name, directory, *rest = sys.argv[1:]
    recorder = SCENARIOS[name](directory, *rest)
    recorder.save(os.path.join(directory, "trace.pkl"), scenario=name)
