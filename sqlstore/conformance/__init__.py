"""Conformance suites: the behaviour every sqlstore backend must show (SPEC §9).

Shipped inside the package so third-party backends can run them. A backend's
test module subclasses the suites and supplies factories (``make_store``,
``make_pair``, ``second_process_target``, optionally ``reset_log``); the
suites supply the tests. See ``docs/conformance.md``.

These modules import ``pytest`` and ``freezegun`` (test dependencies, the
``test`` extra); importing :mod:`sqlstore` itself never imports them.
"""

from __future__ import annotations

from sqlstore.conformance.apply import ApplySuite
from sqlstore.conformance.audit import AuditQuerySuite
from sqlstore.conformance.backward import TailSuite
from sqlstore.conformance.base import FOLLOW_TIMEOUT_S, ProcessTarget, SuiteBase
from sqlstore.conformance.batch import BatchSuite
from sqlstore.conformance.checkpoints import CheckpointSuite
from sqlstore.conformance.creator import CreatorSuite
from sqlstore.conformance.cursor import CursorSuite
from sqlstore.conformance.eventlog import EventLogSuite
from sqlstore.conformance.history import SweepHistorySuite
from sqlstore.conformance.imports import ImportTargetSuite
from sqlstore.conformance.inventory import ConditionalPruneSuite, PagerSuite, PrunableSuite
from sqlstore.conformance.leases import LeaseSuite
from sqlstore.conformance.scopes import ScopesSuite
from sqlstore.conformance.store import StoreSuite
from sqlstore.conformance.versioned import VersionSuite

__all__ = [
    "FOLLOW_TIMEOUT_S",
    "ApplySuite",
    "AuditQuerySuite",
    "BatchSuite",
    "CheckpointSuite",
    "ConditionalPruneSuite",
    "CreatorSuite",
    "CursorSuite",
    "EventLogSuite",
    "ImportTargetSuite",
    "LeaseSuite",
    "PagerSuite",
    "ProcessTarget",
    "PrunableSuite",
    "ScopesSuite",
    "StoreSuite",
    "SuiteBase",
    "SweepHistorySuite",
    "TailSuite",
    "VersionSuite",
]
