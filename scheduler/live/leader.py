"""Leader election on a ``coordination.k8s.io/v1`` Lease, so two replicas never schedule at once.

Semantics follow client-go's ``tools/leaderelection`` with a ``LeaseLock`` (``leaderelection.go``
``tryAcquireOrRenew``, ``renew`` and ``release``):

- The lease records ``holderIdentity``, ``leaseDurationSeconds``, ``acquireTime``, ``renewTime``
  and ``leaseTransitions``. Times are wall-clock MicroTime (RFC 3339 with microseconds) for other
  tools to read; **no decision reads them**, so clock skew between replicas does not matter.
- A candidate judges another holder's lease expired by its *own* clock: it remembers the loop time
  at which it last observed the lease record change (spec or resourceVersion), and the lease is
  expired once that time plus the record's ``leaseDurationSeconds`` has passed. An empty
  ``holderIdentity`` (a released lease) can be taken at once.
- Taking over and renewing are PUTs carrying the resourceVersion read, so of two candidates only
  one wins; the other gets 409 Conflict and stays a follower. A takeover increments
  ``leaseTransitions``.
- The leader renews every ``retry_period_s``. It stops leading as soon as it observes another
  holder, loses a write race, or has had no successful renewal for ``renew_deadline_s`` (measured
  from the start of the last successful renewal, so it stops before any follower can judge the
  lease expired: ``renew_deadline_s < lease_duration_s``).
- :meth:`LeaderElector.release` writes an empty holder (client-go's ``ReleaseOnCancel``), so a
  standby takes over within one ``retry_period_s`` instead of waiting for expiry.

Differences from client-go: no jitter on the retry period (tests run on a fake loop clock and
stay deterministic); ``run`` keeps competing after losing leadership instead of returning (until
:meth:`LeaderElector.release`, after which it never competes again); ``leading`` is cleared the
moment another holder is observed or a write race is lost, rather than at the renew deadline;
the renew deadline counts from the start of the last successful renewal (client-go starts it one
retry period later), and a renewal request still in flight at the deadline is cancelled.

Why not kubernetes-asyncio's ``leaderelection`` module: it measures expiry with ``time.time()``
(so it cannot be tested on a fake loop clock such as looptime's, and depends on wall-clock
jumps) and has no way to release the lease, so a clean shutdown still leaves the standby waiting
a whole lease duration.

This module must not schedule anything: callers watch :attr:`LeaderElector.leading` and start or
stop their work. All HTTP goes through :class:`scheduler.client.kube.KubeClient`.
"""

from __future__ import annotations

import asyncio
import copy
import datetime
import json
import logging
import math

from scheduler.client.kube import JSON, LEASES, ApiError, Conflict, KubeClient, Lane, NotFound

logger = logging.getLogger(__name__)


def micro_time() -> str:
    """The wall-clock time as a Kubernetes MicroTime: ``2026-11-29T10:00:00.123456Z``."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Competes for one Lease and keeps it while it can; see the module docstring.

    ``kube``: the API client. ``namespace``/``name``: the Lease. ``identity``: this replica's
    unique holder identity (e.g. pod name plus a random suffix; two processes with the same
    identity would both lead).

    Settings, all in seconds of the event loop's clock, defaults as kube-scheduler's
    ``--leader-elect-*`` flags:

    - ``lease_duration_s`` (15): how long followers wait after the last observed change of the
      lease before taking it over. Written to the lease as whole seconds (rounded up). Longer
      means a slower failover after a crash; shorter means more risk that a slow leader is
      replaced while it still works.
    - ``renew_deadline_s`` (10): the leader stops leading when no renewal succeeded for this long.
      Must be below ``lease_duration_s`` so the old leader stops before a follower takes over.
    - ``retry_period_s`` (2): time between attempts, for the leader (renew) and followers (poll).
      Must be below ``renew_deadline_s`` so a renewal can be retried before the deadline.

    State, for callers: :attr:`leading` (an ``asyncio.Event``, set while we hold the lease),
    :attr:`state_known` (True once the lease was read or created), :attr:`holder` (the holder
    last observed, ``""`` for a released lease, None before the first read), :attr:`renewed_at`
    (loop time at the start of our last successful acquire or renewal, None before the first).

    Raises ValueError when the settings are not ``lease > renew deadline > retry period > 0``.
    """

    def __init__(self, kube: KubeClient, namespace: str, name: str, identity: str, *,
                 lease_duration_s: float = 15.0, renew_deadline_s: float = 10.0,
                 retry_period_s: float = 2.0) -> None:
        if not identity:
            raise ValueError("identity must not be empty")
        if not lease_duration_s > renew_deadline_s > retry_period_s > 0:
            raise ValueError(f"need lease_duration_s ({lease_duration_s}) > renew_deadline_s ({renew_deadline_s})"
                             f" > retry_period_s ({retry_period_s}) > 0")
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration_s = lease_duration_s
        self.renew_deadline_s = renew_deadline_s
        self.retry_period_s = retry_period_s
        self.leading = asyncio.Event()
        self.state_known = False
        self.holder: str | None = None
        self._not_leading = asyncio.Event()
        self._not_leading.set()
        self._observed: JSON | None = None          # the lease as last read or written
        self._observed_key: tuple[str, str] | None = None   # (spec as JSON, resourceVersion)
        self._observed_at = 0.0                     # loop time of the last observed change
        self.renewed_at: float | None = None          # loop time at the start of our last successful write
        self._lock = asyncio.Lock()                 # one read-modify-write at a time (run vs release)
        self._released = False                      # set by release(): run() stops competing

    @property
    def is_leader(self) -> bool:
        """True while we hold the lease (the same as ``leading.is_set()``)."""
        return self.leading.is_set()

    def _deadline(self) -> float | None:
        """Loop time by which the leader must have renewed, or None when not leading."""
        if not self.is_leader or self.renewed_at is None:
            return None
        return self.renewed_at + self.renew_deadline_s

    async def wait_until_not_leading(self) -> None:
        """Return as soon as we do not hold the lease (at once if we don't now)."""
        await self._not_leading.wait()

    async def run(self) -> None:
        """Compete for the lease forever: acquire it, renew it, or follow its holder.

        Never returns; API errors are logged and retried after ``retry_period_s``. Cancellation
        propagates; when ``run`` ends for any reason, ``leading`` is cleared (we no longer renew)
        but the lease is left as is: call :meth:`release` afterwards to hand it over at once.
        """
        loop = asyncio.get_running_loop()
        try:
            while True:
                deadline = self._deadline()
                if deadline is not None and loop.time() >= deadline:
                    self._lose(f"no successful renewal for {self.renew_deadline_s:g} s")
                    deadline = None
                try:
                    async with asyncio.timeout_at(deadline):
                        await self._attempt()
                except TimeoutError:
                    self._lose(f"renewal did not finish within the {self.renew_deadline_s:g} s renew deadline")
                except ApiError as exc:
                    logger.warning("lease %s/%s: %s failed: %s; retrying in %g s", self.namespace, self.name,
                                   "renewal" if self.is_leader else "acquisition", exc, self.retry_period_s)
                pause_s = self.retry_period_s
                if self.is_leader:  # wake up at the deadline at the latest, to stop leading on time
                    pause_s = min(pause_s, max(0.0, (self._deadline() or 0.0) - loop.time()))
                await asyncio.sleep(pause_s)
        finally:
            self._lose("elector stopped")

    async def release(self) -> None:
        """Hand the lease over: if we are its recorded holder, write an empty holder (client-go release).

        Clears ``leading`` first, so the caller stops before a standby can start. This is for
        shutdown: afterwards a still-running :meth:`run` stops competing (it idles until
        cancelled) and never takes the lease again. The record keeps ``leaseTransitions``;
        ``leaseDurationSeconds`` becomes 1, as in client-go. Never raises :class:`ApiError`: on
        failure the lease simply expires.
        """
        self._released = True
        self._lose("released")
        async with self._lock:  # waits for an attempt in flight, so we write after it
            for _ in range(2):  # a second try after a 409, e.g. a renewal cancelled mid-flight
                lease = self._observed
                if lease is None or _spec(lease).get("holderIdentity") != self.identity:
                    return
                body = copy.deepcopy(lease)
                now = micro_time()
                body["spec"].update(holderIdentity="", leaseDurationSeconds=1, acquireTime=now, renewTime=now)
                try:
                    self._observe(await self.kube.replace(LEASES, self.namespace, self.name, body, lane=Lane.LEASE))
                    logger.info("lease %s/%s: released by %s", self.namespace, self.name, self.identity)
                    return
                except Conflict:
                    try:
                        self._observe(await self.kube.get(LEASES, self.namespace, self.name, lane=Lane.LEASE))
                    except ApiError as exc:
                        logger.warning("lease %s/%s: release failed: %s", self.namespace, self.name, exc)
                        return
                except ApiError as exc:
                    logger.warning("lease %s/%s: release failed: %s; it expires in %s s", self.namespace,
                                   self.name, exc, _spec(lease).get("leaseDurationSeconds"))
                    return

    async def _attempt(self) -> None:
        """One round of client-go's ``tryAcquireOrRenew``. Raises :class:`ApiError`."""
        async with self._lock:
            if self._released:
                return
            started = asyncio.get_running_loop().time()
            if self.is_leader and self._observed is not None:
                # Fast path (client-go ≥ 1.26): renew the record we wrote last, without a GET.
                try:
                    self._observe(await self.kube.replace(LEASES, self.namespace, self.name,
                                                          self._claim(self._observed), lane=Lane.LEASE))
                    self.renewed_at = started
                    return
                except Conflict:
                    logger.info("lease %s/%s: changed since our last renewal; re-reading", self.namespace, self.name)
            try:
                lease = await self.kube.get(LEASES, self.namespace, self.name, lane=Lane.LEASE)
            except NotFound:
                await self._create(started)
                return
            self._observe(lease)
            spec = _spec(lease)
            holder = str(spec.get("holderIdentity") or "")
            if holder and holder != self.identity and not self._expired(spec):
                return  # a follower: _observe has cleared `leading` and logged the holder
            try:
                self._observe(await self.kube.replace(LEASES, self.namespace, self.name, self._claim(lease),
                                                      lane=Lane.LEASE))
            except Conflict:
                # Someone wrote the lease between our GET and PUT: they won; the next round reads who.
                self._lose("lost a race to write the lease")
                logger.info("lease %s/%s: another candidate wrote it first", self.namespace, self.name)
                return
            self.renewed_at = started
            if holder and holder != self.identity:
                logger.info("lease %s/%s: took over from %s (expired)", self.namespace, self.name, holder)
            self._lead()

    async def _create(self, started: float) -> None:
        now = micro_time()
        body: JSON = {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": self._duration_field(),
                     "acquireTime": now, "renewTime": now, "leaseTransitions": 0},
        }
        try:
            self._observe(await self.kube.create(LEASES, self.namespace, body, lane=Lane.LEASE))
        except Conflict:
            self._lose("lost a race to create the lease")
            logger.info("lease %s/%s: another candidate created it first", self.namespace, self.name)
            return
        self.renewed_at = started
        self._lead()

    def _claim(self, lease: JSON) -> JSON:
        """``lease`` with us as holder and a fresh renewTime; a takeover stamps acquireTime and +1 transition."""
        body = copy.deepcopy(lease)
        spec = body.setdefault("spec", {})
        now = micro_time()
        if spec.get("holderIdentity") != self.identity:
            spec["acquireTime"] = now
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        spec.update(holderIdentity=self.identity, leaseDurationSeconds=self._duration_field(), renewTime=now)
        return body

    def _duration_field(self) -> int:
        return max(1, math.ceil(self.lease_duration_s))

    def _observe(self, lease: JSON) -> None:
        """Record ``lease``; restart the expiry clock if its record or resourceVersion changed."""
        key = (json.dumps(_spec(lease), sort_keys=True), str((lease.get("metadata") or {}).get("resourceVersion")))
        if key != self._observed_key:
            self._observed_key = key
            self._observed_at = asyncio.get_running_loop().time()
        self._observed = lease
        self.state_known = True
        holder = str(_spec(lease).get("holderIdentity") or "")
        if holder != self.identity:
            self._lose(f"lease is held by {holder}" if holder else "lease was released")
            if holder != self.holder:
                logger.info("lease %s/%s: leader is %s", self.namespace, self.name, holder or "nobody (released)")
        self.holder = holder

    def _expired(self, spec: JSON) -> bool:
        duration_s = float(spec.get("leaseDurationSeconds") or self.lease_duration_s)
        return self._observed_at + duration_s < asyncio.get_running_loop().time()

    def _lead(self) -> None:
        if not self.leading.is_set():
            logger.info("lease %s/%s: became leader as %s", self.namespace, self.name, self.identity)
            self.leading.set()
            self._not_leading.clear()

    def _lose(self, reason: str) -> None:
        if self.leading.is_set():
            logger.warning("lease %s/%s: lost leadership: %s", self.namespace, self.name, reason)
            self.leading.clear()
            self._not_leading.set()


def _spec(lease: JSON) -> JSON:
    spec = lease.get("spec")
    return spec if isinstance(spec, dict) else {}
