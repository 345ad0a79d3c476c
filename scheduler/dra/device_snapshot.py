"""The solver's DRA input: the inventory plus every pending pod's resolved claims, as one value.

Built once per cycle (``run``) or per snapshot (``simulate``); :meth:`DraView.with_allocated` adds a
plan's devices the way :meth:`~scheduler.framework.snapshot.Snapshot.assume` adds its pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from scheduler.dra.claims import ClaimIndex, PodClaims, resolve_all
from scheduler.dra.inventory import Inventory, selector_mask
from scheduler.framework.node_table import BoolArray
from scheduler.model.dra import DeviceUse, taken_devices
from scheduler.model.pod import Pod


@dataclass(frozen=True, eq=False)
class DraView:
    """``inventory``; ``pods``: pod key → its claims; ``pinned``: allocated claim key → node mask;
    ``assumed``: how plans not yet visible in claims use their devices; ``held``: (D,) bool over
    ``inventory.device_index()``, the devices allocated or assumed (what no solve on this view can take),
    kept up to date by :meth:`with_allocated` so no solve recounts them."""

    inventory: Inventory
    pods: Mapping[str, PodClaims]
    pinned: Mapping[str, BoolArray] = field(default_factory=dict)
    assumed: tuple[DeviceUse, ...] = ()
    held: BoolArray = field(kw_only=True)

    @classmethod
    def build(cls, inventory: Inventory, index: ClaimIndex, pods: Iterable[Pod],
              assumed: Iterable[DeviceUse] = ()) -> DraView:
        return cls.of(inventory, index, resolve_all(index, pods), assumed)

    @classmethod
    def of(cls, inventory: Inventory, index: ClaimIndex, resolved: Mapping[str, PodClaims],
           assumed: Iterable[DeviceUse] = (), pinned_keys: Iterable[str] | None = None,
           held: BoolArray | None = None) -> DraView:
        """The view over claims already resolved (pod key → claims, as :func:`resolve_all` gives them): the
        allocated claims they pin (``pinned_keys`` when the caller knows them, else found in ``resolved``)
        resolved to node masks through ``index``. ``held``: ``inventory.held_mask(assumed)`` when the caller
        keeps it up to date itself (read-only), else computed here."""
        keys = sorted({k for c in resolved.values() for k in c.pinned} if pinned_keys is None else pinned_keys)
        everywhere = np.ones(len(inventory.table), dtype=bool)
        pinned = {}
        for key, selector in zip(keys, index.pinned_selectors(keys), strict=True):
            pinned[key] = everywhere if selector is None else selector_mask(selector, inventory.table.nodes)
        assumed = tuple(assumed)
        return cls(inventory, resolved, pinned, assumed, held=inventory.held_mask(assumed) if held is None else held)

    def with_allocated(self, uses: Iterable[DeviceUse]) -> DraView:
        """A view where ``uses`` apply too (a plan was assumed): O(D) for the mask."""
        added = tuple(uses)
        held = self.held | self.inventory.device_index().mask(taken_devices(added))
        held.setflags(write=False)
        return replace(self, assumed=self.assumed + added, held=held)

    def pinned_mask(self, claims: PodClaims) -> BoolArray | None:
        """Nodes every allocated claim of the pod allows, or None if it has none."""
        mask: BoolArray | None = None
        for key in claims.pinned:
            m = self.pinned.get(key)
            if m is not None:
                mask = m.copy() if mask is None else mask & m
        return mask
