"""What a pod's volumes ask for that is not honoured is listed, never dropped silently."""

from __future__ import annotations

from scheduler.framework.storage_view import StorageView
from scheduler.model.storage import PersistentVolumeClaim
from scheduler.solver.plugins.volume_claims import not_honoured
from tests.unit.groups.builders import NS
from tests.unit.solver.builders import pod
from tests.unit.solver.storage_builders import pvc, storage_class, with_volumes


def with_vac(claim: PersistentVolumeClaim, name: str) -> PersistentVolumeClaim:
    return claim.model_copy(update={"spec": claim.spec.model_copy(update={"volume_attributes_class_name": name})})


def test_an_unbound_claims_volume_attributes_class_is_reported() -> None:
    worker = with_volumes(pod("w-0", namespace=NS), "fast-data", "plain")
    view = StorageView.build(claims=[with_vac(pvc("fast-data", namespace=NS), "gold"), pvc("plain", namespace=NS)],
                             classes=[storage_class()])
    assert not_honoured(view, worker) == ((
        "spec.volumes[0].persistentVolumeClaim",
        'PersistentVolumeClaim ml/fast-data: spec.volumeAttributesClassName "gold" is not matched against '
        "PersistentVolumes"),)


def test_a_bound_claim_asks_nothing_more() -> None:
    claim = with_vac(pvc("data", namespace=NS, volume_name="pv-1", phase="Bound"), "gold")
    view = StorageView.build(claims=[claim], classes=[storage_class()])
    assert not_honoured(view, with_volumes(pod("w-0", namespace=NS), "data")) == ()
