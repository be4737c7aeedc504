"""``LeaseSuite``: time-limited exclusive claims with fencing tokens (SPEC §3.4).

Expiry is tested with a frozen clock (freezegun), so the backend must read the
clock at call time. The cross-handle and cross-process tests show that a lease
is a claim on the shared durable state, not on one store object.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from freezegun import freeze_time

from sqlstore.conformance.base import ProcessTarget, SuiteBase, needs_second_process
from sqlstore.conformance.process import workers
from sqlstore.errors import InvalidSessionId, LeaseHeld
from sqlstore.inventory import Lease
from sqlstore.ports import Store
from sqlstore.session import Session

T0 = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
"""The instant the frozen-clock lease tests start at."""

MINUTE = timedelta(minutes=1)


class LeaseSuite(SuiteBase):
    """Acquire, renew, release and ``held`` behave alike on every backend."""

    __test__ = False

    def test_lease_acquire_returns_the_claim(self, store: Store) -> None:
        """A new lease names the id and owner, expires after the ttl, and is held."""
        with freeze_time(T0):
            lease = store.leases.acquire("conf-lease", "alice", 5 * MINUTE)
            assert isinstance(lease, Lease)
            assert (lease.id, lease.owner) == ("conf-lease", "alice")
            assert lease.expires_at == T0 + 5 * MINUTE
            assert lease.token >= 1
            assert store.leases.held() == {"conf-lease"}

    def test_lease_same_owner_reacquires_with_the_same_token(self, store: Store) -> None:
        """The holder acquiring again extends the lease and keeps its fencing token."""
        with freeze_time(T0) as frozen:
            first = store.leases.acquire("conf-lease", "alice", 5 * MINUTE)
            frozen.tick(MINUTE)
            again = store.leases.acquire("conf-lease", "alice", 5 * MINUTE)
            assert again.token == first.token
            assert again.expires_at == T0 + 6 * MINUTE

    def test_lease_another_owner_waits_for_expiry(self, store: Store) -> None:
        """A live lease refuses another owner (naming the holder); after expiry it is taken over."""
        with freeze_time(T0) as frozen:
            first = store.leases.acquire("conf-lease", "alice", 5 * MINUTE)
            with pytest.raises(LeaseHeld, match="alice"):
                store.leases.acquire("conf-lease", "bob", 5 * MINUTE)
            frozen.tick(5 * MINUTE)  # expired exactly now
            assert store.leases.held() == set()
            taken = store.leases.acquire("conf-lease", "bob", 5 * MINUTE)
            assert taken.owner == "bob"
            assert taken.token > first.token

    def test_lease_token_grows_after_release(self, store: Store) -> None:
        """Every new claim after a release gets a larger token (fencing across takeovers)."""
        with freeze_time(T0):
            first = store.leases.acquire("conf-lease", "alice", MINUTE)
            store.leases.release(first)
            assert store.leases.held() == set()
            second = store.leases.acquire("conf-lease", "alice", MINUTE)
            assert second.token > first.token

    def test_lease_renew_extends_a_live_lease(self, store: Store) -> None:
        """Renewing a live lease moves its expiry to now + ttl and keeps the token."""
        with freeze_time(T0) as frozen:
            lease = store.leases.acquire("conf-lease", "alice", 2 * MINUTE)
            frozen.tick(MINUTE)
            renewed = store.leases.renew(lease, 10 * MINUTE)
            assert (renewed.token, renewed.owner) == (lease.token, "alice")
            assert renewed.expires_at == T0 + 11 * MINUTE
            frozen.tick(5 * MINUTE)  # past the first expiry, inside the renewed one
            assert store.leases.held() == {"conf-lease"}

    def test_lease_renew_of_a_lost_lease_fails(self, store: Store) -> None:
        """Renewing an expired or taken-over lease raises ``LeaseHeld`` and changes nothing."""
        with freeze_time(T0) as frozen:
            lease = store.leases.acquire("conf-lease", "alice", MINUTE)
            frozen.tick(2 * MINUTE)
            with pytest.raises(LeaseHeld):
                store.leases.renew(lease, MINUTE)
            taker = store.leases.acquire("conf-lease", "bob", 5 * MINUTE)
            with pytest.raises(LeaseHeld):
                store.leases.renew(lease, MINUTE)
            assert store.leases.acquire("conf-lease", "bob", 5 * MINUTE).token == taker.token

    def test_lease_release_with_a_stale_claim_does_nothing(self, store: Store) -> None:
        """Releasing an old claim leaves the new holder's lease in place; release is idempotent."""
        with freeze_time(T0) as frozen:
            old = store.leases.acquire("conf-lease", "alice", MINUTE)
            frozen.tick(2 * MINUTE)
            new = store.leases.acquire("conf-lease", "bob", 5 * MINUTE)
            store.leases.release(old)
            assert store.leases.held() == {"conf-lease"}
            store.leases.release(new)
            store.leases.release(new)
            assert store.leases.held() == set()

    def test_lease_held_lists_only_live_leases(self, store: Store) -> None:
        """``held`` returns the ids whose lease has not expired, across many ids."""
        with freeze_time(T0) as frozen:
            store.leases.acquire("conf-short", "alice", MINUTE)
            store.leases.acquire("conf-long", "alice", 10 * MINUTE)
            store.leases.acquire("conf-other", "bob", 10 * MINUTE)
            assert store.leases.held() == {"conf-short", "conf-long", "conf-other"}
            frozen.tick(2 * MINUTE)
            assert store.leases.held() == {"conf-long", "conf-other"}

    def test_lease_ttl_must_be_positive(self, store: Store) -> None:
        """A zero or negative ttl raises ``ValueError`` and takes no lease."""
        for ttl in (timedelta(0), -MINUTE):
            with pytest.raises(ValueError):
                store.leases.acquire("conf-lease", "alice", ttl)
        assert store.leases.held() == set()

    def test_lease_needs_a_valid_session_id(self, store: Store) -> None:
        """An invalid session id raises ``InvalidSessionId``."""
        with pytest.raises(InvalidSessionId):
            store.leases.acquire("", "alice", MINUTE)

    def test_lease_protects_from_conditional_delete(self, store: Store) -> None:
        """``delete_if_unchanged`` spares a leased session and deletes it once released."""
        store.sessions.save(Session.new("conf-leased"))
        row = store.sessions.meta("conf-leased")
        lease = store.leases.acquire("conf-leased", "worker", 5 * MINUTE)
        assert store.sessions.delete_if_unchanged(row) is False
        assert store.sessions.meta("conf-leased") == row
        store.leases.release(lease)
        assert store.sessions.delete_if_unchanged(row) is True

    def test_lease_is_seen_by_a_second_handle(self, pair: tuple[Store, Store]) -> None:
        """A lease taken through one handle refuses another owner on the second handle."""
        first, second = pair
        lease = first.leases.acquire("conf-lease", "alice", 5 * MINUTE)
        assert second.leases.held() == {"conf-lease"}
        with pytest.raises(LeaseHeld):
            second.leases.acquire("conf-lease", "bob", 5 * MINUTE)
        second.leases.release(lease)
        assert first.leases.held() == set()

    @needs_second_process
    def test_lease_is_exclusive_across_processes(
        self, tmp_path: Path, pair: tuple[Store, Store], process_target: ProcessTarget
    ) -> None:
        """A lease held in this process refuses a child process, and the child's is seen here."""
        first, _ = pair
        mine = first.leases.acquire("conf-lease-mine", "parent", 5 * MINUTE)
        with workers(process_target, 1) as (child,):
            assert child.call("acquire", "conf-lease-mine", "child", 300.0) == "held"
            token = child.call("acquire", "conf-lease-child", "child", 300.0)
            assert isinstance(token, int)
        assert first.leases.held() == {"conf-lease-mine", "conf-lease-child"}
        with pytest.raises(LeaseHeld, match="child"):
            first.leases.acquire("conf-lease-child", "parent", MINUTE)
        first.leases.release(mine)
