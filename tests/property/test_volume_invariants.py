"""Volume invariants over random clusters, through ``simulate`` (the one cycle, the recording binder):

1. all or nothing still holds with volumes: a gang is placed whole or not at all;
2. no PV is given to two claims, and every claim is bound at most once;
3. a placed pod's claims are bound where its node is: a bound PV's node affinity admits the node, and a
   provisioned claim was provisioned for that node, in a zone its class allows;
4. a ReadWriteOncePod claim is used by at most one pod;
5. no node ends above its CSINode attach limit.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from scheduler.framework import SolverConfig
from scheduler.framework.selectors import node_selector_matches
from scheduler.framework.storage_view import claim_keys
from scheduler.model import Node, Pod, PodGroup
from scheduler.model.base import ObjectMeta
from scheduler.model.storage import PersistentVolume, PersistentVolumeClaim
from scheduler.offline.loader import Objects
from scheduler.offline.simulate import simulate
from scheduler.solver.plugins.node_volume_limits import attached, limits
from tests.unit.groups.builders import NS, pg
from tests.unit.solver.builders import node, pod
from tests.unit.solver.storage_builders import EBS, ZONE, csi_node, pv, pvc, storage_class, with_volumes

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def clusters(draw: st.DrawFn) -> tuple[Objects, list[str]]:
    n_nodes = draw(st.integers(1, 5))
    nodes = [node(f"n{i}", cpu="4", labels={ZONE: draw(st.sampled_from("ab")), "kubernetes.io/hostname": f"n{i}"})
             for i in range(n_nodes)]
    csi = [csi_node(n.name, draw(st.integers(0, 4))) for n in nodes if draw(st.booleans())]
    zones = draw(st.lists(st.sampled_from("ab"), min_size=1, max_size=2, unique=True))
    classes = [storage_class("gp3", zones=zones), storage_class("local", provisioner="kubernetes.io/no-provisioner")]
    sizes = st.sampled_from(["5Gi", "20Gi"])
    volumes = [pv(f"local-{n.name}-{k}", storage_class="local", node=n.name, size=draw(sizes))
               for n in nodes for k in range(draw(st.integers(0, 2)))]
    claims: list[PersistentVolumeClaim] = []
    pods: list[Pod] = []
    groups: list[PodGroup] = []
    shared_rwop = pvc("ledger", namespace=NS, storage_class="gp3", modes=["ReadWriteOncePod"])
    claims.append(shared_rwop)
    for g in range(draw(st.integers(1, 4))):
        size = draw(st.integers(1, 3))
        groups.append(pg(f"g{g}", draw(st.integers(1, size))))
        for m in range(size):
            names = []
            for c in range(draw(st.integers(0, 2))):
                name = f"data-g{g}-{m}-{c}"
                claims.append(pvc(name, namespace=NS, storage_class=draw(st.sampled_from(["gp3", "local"])),
                                  size="10Gi"))
                names.append(name)
            if draw(st.integers(0, 5)) == 0:
                names.append("ledger")
            pods.append(with_volumes(pod(f"g{g}-{m}", namespace=NS, group=f"g{g}", cpu="1"), *names))
    objects = Objects(nodes=nodes, pods=pods, podgroups=groups, volume_claims=claims, volumes=volumes,
                      storage_classes=classes, csi_nodes=csi)
    return objects, zones


def admits(volume: PersistentVolume, where: Node) -> bool:
    affinity = volume.spec.node_affinity
    if affinity is None or affinity.required is None:
        return True
    return node_selector_matches(affinity.required, Node(metadata=ObjectMeta(labels=where.metadata.labels)))


@SETTINGS
@given(clusters())
def test_volume_invariants_hold_for_every_plan(case: tuple[Objects, list[str]]) -> None:
    objects, zones = case
    sim = simulate(objects, "gang-scheduler", SolverConfig())
    final = sim.snapshot
    assert final is not None and final.volumes is not None
    view = final.volumes
    placed = {p.pod.key: p.node for p in sim.pods if p.node is not None}
    event(f"volumes bound: {'some' if sim.volumes else 'none'}")
    # 1. all or nothing
    for g in sim.groups:
        members = [p for p in objects.pods if p.group_name == g.key.name]
        got = sum(p.key in placed for p in members)
        group = next(x for x in objects.podgroups if x.metadata.name == g.key.name)
        need = group.spec.scheduling_policy.gang.min_count if group.spec.scheduling_policy.gang else 1
        assert got == 0 or got >= (need or 1), f"{g.key.name}: {got} placed < minCount {need}"
    # 2. one claim per PV, one binding per claim
    by_volume: Counter[str] = Counter(c.spec.volume_name for c in view.claims.values() if c.spec.volume_name)
    assert all(n == 1 for n in by_volume.values()), by_volume
    assert len({v.binding.claim for v in sim.volumes}) == len(sim.volumes)
    # 3. claims bound where their pods are
    nodes = {n.name: n for n in objects.nodes}
    for key, where in placed.items():
        pod_obj = next(p for p in objects.pods if p.key == key)
        for claim_key in claim_keys(pod_obj):
            claim = view.claims[claim_key]
            assert claim.is_bound, f"{claim_key} of placed {key} is not bound"
            volume = view.volumes[claim.spec.volume_name]
            assert admits(volume, nodes[where]), f"{volume.name} does not admit {where}"
            if claim.selected_node is not None:
                assert claim.selected_node == where
                assert nodes[where].metadata.labels[ZONE] in zones
    # 4. one user per ReadWriteOncePod claim
    users = Counter(k for key in placed for k in claim_keys(next(p for p in objects.pods if p.key == key))
                    if view.claims[k].read_write_once_pod)
    assert all(n <= 1 for n in users.values()), users
    # 5. attach limits
    limit = limits(view, final.table, EBS)
    for i, info in enumerate(final.infos):
        assert len(attached(view, info).get(EBS, ())) <= limit[i], info.name

