"""A profile made from another by ``dataclasses.replace`` keeps its own plugins once gated.

Preemption's what-ifs solve with the default profile plus :class:`PreemptionCost` (prefer nodes whose removed
pods matter least). ``Profile.for_pods`` memoises, per set of gated-off plugins, the profile without them — and
a profile made by ``replace`` shared that memo with the one it was made from, so the what-ifs got the default
profile's gated copy back, without PreemptionCost (and had the what-if profile been gated first, every later
solve would have been steered by stale preemption scores).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from scheduler.preemption.selection import COST_NAME, PreemptionCost
from scheduler.solver.plugins import DEFAULT_PROFILE
from tests.unit.preemption.kit import Cluster, group, nodes, pending, running


def test_a_steered_profile_keeps_preemption_cost_after_the_default_one_was_gated() -> None:
    c = Cluster(nodes=nodes(2), groups=[group("high", 1, priority=10)])
    c.pods += [running("low", "n0", cpu="4", priority=0, scheduler="default-scheduler"), pending("high-0", "high")]
    snapshot = c.cache().snapshot()
    pods = [p for p in c.pods if not p.is_bound]
    plain = DEFAULT_PROFILE.for_pods(snapshot, pods)  # gated first: the memo is filled from the default profile
    steered = dataclasses.replace(DEFAULT_PROFILE, scorers=(*DEFAULT_PROFILE.scorers,
                                                            PreemptionCost(np.zeros(2, dtype=np.int64))))
    assert COST_NAME in [s.name for s in steered.for_pods(snapshot, pods).scorers]
    assert COST_NAME not in [s.name for s in plain.scorers]
    assert COST_NAME not in [s.name for s in DEFAULT_PROFILE.for_pods(snapshot, pods).scorers]
