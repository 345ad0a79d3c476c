"""The chaos suite: ``gang-scheduler run`` as a subprocess against a misbehaving emulator.

Each variant (one test module, marker ``chaos``, run by ``make chaos`` and not by ``make test``)
drives the real binary against :class:`~tests.chaos.server.ChaosApiServer` — SIGKILLs at exact
requests, injected 409/429/5xx, watch resets and 410s, thieves during downtime, leader failover,
malformed objects — and ends with the at-rest assertions of :mod:`tests.chaos.atrest`. The
figures of every variant go to stdout and to ``.chaos-report.json`` (:mod:`tests.chaos.report`).

Settings (environment): ``CHAOS_SEED`` (default 12), ``CHAOS_SETTLE_S`` (how long the at-rest
poll waits, default 20), ``CHAOS_EXAMPLES`` (hypothesis batches of the malformed variant,
default 30), ``CHAOS_SCHEDULER_ARGS`` (extra ``gang-scheduler run`` flags, shell-split).
"""
