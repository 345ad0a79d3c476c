"""Preemption's in-place what-if equals the copied one.

:class:`~scheduler.preemption.selection.WhatIf` keeps one usage matrix and one NodeInfo list up to date as units
are removed and put back (it applies only the units flipped since the last call). Property: after any sequence
of flips, its usage (:meth:`WhatIf.room`) and its snapshot — usage, NodeInfos, inter-pod index — are exactly
those of :meth:`Snapshot.without` applied afresh to the base snapshot with the pods of the units gone now, and
the room bound kept up to date with it (:meth:`RoomBound.update`) sums the same room as one built afresh.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scheduler.cache.group_view import CacheGroupView
from scheduler.framework.snapshot import Snapshot
from scheduler.preemption.selection import PodVectors, RoomBound, WhatIf
from scheduler.preemption.units import candidates, usable_rows
from scheduler.solver.plugins import DEFAULT_PROFILE
from scheduler.solver.search import minimum_need
from tests.property.test_preemption import SETTINGS, Case, cases


def same(got: Snapshot, want: Snapshot) -> None:
    assert np.array_equal(got.used, want.used)
    assert [info.name for info in got.infos] == [info.name for info in want.infos]
    assert [sorted(info.pods) for info in got.infos] == [sorted(info.pods) for info in want.infos]
    assert sorted(e.key for e in got.pod_index.entries()) == sorted(e.key for e in want.pod_index.entries())


@SETTINGS
@given(cases(), st.data())
def test_in_place_what_if_equals_a_fresh_copy(case: Case, data: st.DataObject) -> None:
    cache = case.cluster.cache()
    tree = cache.tree(case.root)
    assert tree is not None
    base = cache.snapshot()
    units = candidates(base, tree, CacheGroupView(cache), np.ones(len(base.infos), dtype=bool), inclusive=True)
    vectors = PodVectors()
    whatif = WhatIf(base, units, vectors)
    need = minimum_need(tree, base)
    usable = usable_rows(base, tree, DEFAULT_PROFILE.static_check)
    bound = RoomBound(tree, base, need, usable)
    steps = data.draw(st.lists(st.tuples(st.lists(st.booleans(), min_size=len(units), max_size=len(units)),
                                         st.booleans()), min_size=1, max_size=6))
    for flags, whole in steps:
        whatif.gone[:] = flags
        want = base.without([p for u, out in zip(units, flags, strict=True) if out for p in u.pods])
        if whole:
            same(whatif.snapshot(), want)
        bound.update(*whatif.room())
        assert np.array_equal(whatif.used, want.used)
        assert np.array_equal(bound.total, RoomBound(tree, want, need, usable).total)
    # a second what-if over the same pods reads the remembered vectors: same answers
    again = WhatIf(base, units, vectors)
    same(again.snapshot(), base.without([p for u in units for p in u.pods]))
