"""Victim selection's memo of request vectors: per pod object, never stale."""

from __future__ import annotations

from scheduler.preemption.selection import PodVectors
from tests.unit.preemption.kit import Cluster, nodes, running


def test_request_vectors_are_remembered_per_pod_object_and_follow_a_changed_pod() -> None:
    """The same pod object reads its vector from the memo; a new object for the same pod (the cache replaces it when
    it changes) with other requests gets its own, also after the old one is gone."""
    small = running("p", "n0", cpu="1")
    snapshot = Cluster(nodes=nodes(1), pods=[small]).cache().snapshot()
    cpu = snapshot.table.column["cpu"]
    vectors = PodVectors()
    first = vectors.matrix(snapshot, [small])
    assert first[0, cpu] == 1000
    assert vectors.matrix(snapshot, [small])[0, cpu] == 1000
    del small
    for _ in range(50):  # objects made after the first is freed may take its address: none may match it
        bigger = running("p", "n0", cpu="3")
        assert vectors.matrix(snapshot, [bigger])[0, cpu] == 3000
    assert vectors.matrix(snapshot, []).shape == (0, len(snapshot.table.resources))
