"""Retention: delete stale sessions by modification time, safely.

* :mod:`retention.policy` — :class:`Policy` / :class:`Rule`, TOML loading, durations;
* :mod:`retention.planner` — the pure planner (:func:`plan_rows`) and :func:`plan`;
* :mod:`retention.sweep` — :func:`sweep`, conditional deletes in short, paced transactions;
* :mod:`retention.daemon` — :func:`run_daemon`, the foreground loop;
* :mod:`retention.history` — the record of every sweep (``retention_runs``).
"""

from __future__ import annotations

from retention.daemon import DAEMON_LEASE_NAME, install_stop_handlers, run_daemon, sweep_round
from retention.history import RunRecord, list_runs, record_run
from retention.pacing import Pacing
from retention.planner import Plan, PlanCounts, PlanEntry, plan, plan_rows
from retention.policy import (
    DEFAULT_CONFIG,
    DEFAULT_POLICY,
    Policy,
    PolicyError,
    RetentionConfig,
    Rule,
    format_duration,
    load_config,
    load_policy,
    parse_duration,
)
from retention.sweep import Report, sweep

__all__ = [
    "DAEMON_LEASE_NAME",
    "DEFAULT_CONFIG",
    "DEFAULT_POLICY",
    "Pacing",
    "Plan",
    "PlanCounts",
    "PlanEntry",
    "Policy",
    "PolicyError",
    "Report",
    "RetentionConfig",
    "Rule",
    "RunRecord",
    "format_duration",
    "install_stop_handlers",
    "list_runs",
    "load_config",
    "load_policy",
    "parse_duration",
    "plan",
    "plan_rows",
    "record_run",
    "run_daemon",
    "sweep",
    "sweep_round",
]
