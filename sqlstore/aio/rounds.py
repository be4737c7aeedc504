"""``RoundBatcher``: the write calls ready at once on an event loop share one worker job.

Concurrent tasks on one loop (8 graph runs each awaiting ``aput``, 8
conversations each awaiting ``add_items``) would otherwise cost two thread hops
per call and one member per call in the store's group commit, with the worker
threads contending for the GIL. The batcher queues every call made before the
loop runs its next round of callbacks and hands them to one worker-thread job
(one hop there, one back); the job's function writes them together (on SQLite
one transaction and one fsync, each call still its own unit: one that fails is
rolled back alone) and returns each call's own result or error. Used by the
LangGraph saver (``CheckpointStore.put_many``) and the OpenAI Agents session
(``sqlstore.ports.apply_each``).

Like every write of :class:`~sqlstore.aio.runner.Runner`, a queued call is
shielded: cancelling its caller does not stop it, and the caller's
``CancelledError`` is raised only once the call has ended (a failure nobody
awaits then is logged on ``sqlstore.aio``). ``Runner.drain`` waits for the
jobs, so closing a store through its runner never closes it under a batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

from sqlstore.aio.runner import Runner

A = TypeVar("A")

Outcome = tuple[Any, BaseException | None]
"""One call's (result, error) as the batch function returns it."""

log = logging.getLogger("sqlstore.aio")


class RoundBatcher(Generic[A]):
    """Queues calls per event loop and runs each round of them as one batch job.

    Args:
        runner: the pool the batch jobs run on (and that ``drain`` waits for).
        run_batch: called in a worker thread with the queued arguments, in
            call order; returns one (result, error) per argument.
    """

    def __init__(self, runner: Runner, run_batch: Callable[[list[A]], list[Outcome]]) -> None:
        self._runner = runner
        self._run_batch = run_batch
        self._queues: dict[asyncio.AbstractEventLoop, list[tuple[A, asyncio.Future[Any]]]] = {}

    async def call(self, argument: A) -> Any:
        """Queue one call for this loop's next batch and return its result once stored."""
        self._runner.check_open()
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[Any] = loop.create_future()
        queue = self._queues.get(loop)
        if queue is None:
            queue = self._queues[loop] = []
            # After the callbacks already scheduled: the other tasks woken with this one.
            loop.call_soon(self._flush, loop)
        queue.append((argument, waiter))
        try:
            return await asyncio.shield(waiter)
        except asyncio.CancelledError:
            while not waiter.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait([waiter])
            if not waiter.cancelled() and waiter.exception() is not None:
                log.warning("a write whose caller was cancelled failed: %r", waiter.exception())
            raise

    def _flush(self, loop: asyncio.AbstractEventLoop) -> None:
        batch = self._queues.pop(loop, [])
        if not batch:
            return
        try:
            job = self._runner.submit(self._run_batch, [argument for argument, _ in batch])
        except Exception as exc:  # the saver was closed meanwhile
            for _, waiter in batch:
                waiter.set_exception(exc)
            return

        def finished(done: Future[list[Outcome]]) -> None:  # runs in the worker thread
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting
                loop.call_soon_threadsafe(_hand_out, done, batch)

        job.add_done_callback(finished)


def _hand_out(done: Future[list[Outcome]], batch: list[tuple[Any, asyncio.Future[Any]]]) -> None:
    """Give each caller of a finished batch its own result or error."""
    error = done.exception()
    outcomes: list[Outcome] = [(None, error)] * len(batch) if error is not None else done.result()
    for (result, failure), (_, waiter) in zip(outcomes, batch, strict=True):
        if waiter.done():
            continue
        if failure is not None:
            waiter.set_exception(failure)
        else:
            waiter.set_result(result)
