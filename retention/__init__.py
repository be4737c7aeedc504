"""Retention: delete stale sessions by modification time, safely.

Installed as ``sqlstore.retention`` (in a checkout also importable as
``retention``); modules here import each other relatively.

* :mod:`retention.policy` — :class:`Policy` / :class:`Rule`, TOML loading, durations;
* :mod:`retention.planner` — the pure planner (:func:`plan_rows`) and :func:`plan`;
* :mod:`retention.sweep` — :func:`sweep`, conditional deletes in short, paced transactions;
* :mod:`retention.daemon` — :func:`run_daemon`, the foreground loop;
* :mod:`retention.history` — the record of every sweep (``retention_runs``).
"""

from __future__ import annotations

from .daemon import (
    DAEMON_LEASE_NAME,
    DEFAULT_JITTER,
    RoundResult,
    daemon_owner,
    install_stop_handlers,
    run_daemon,
    sweep_round,
)
from .history import DEFAULT_HISTORY_LIMIT, RunRecord, list_runs, record_run
from .pacing import Pacing
from .planner import Plan, PlanCounts, PlanEntry, plan, plan_rows
from .policy import (
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
from .sweep import Report, sweep

__all__ = [
    "DAEMON_LEASE_NAME",
    "DEFAULT_CONFIG",
    "DEFAULT_HISTORY_LIMIT",
    "DEFAULT_JITTER",
    "DEFAULT_POLICY",
    "Pacing",
    "Plan",
    "PlanCounts",
    "PlanEntry",
    "Policy",
    "PolicyError",
    "Report",
    "RetentionConfig",
    "RoundResult",
    "Rule",
    "RunRecord",
    "daemon_owner",
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
