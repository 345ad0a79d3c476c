"""The static cost estimate of DRA selectors (``scheduler.dra.cel_cost``) on random selectors.

cel-go's estimate (checker/cost.go) adds a node's own cost to its operands', multiplies a loop's by the
range size and takes the union of a conditional's branches, all saturating at 2**64-1, never
subtracting: so putting an expression inside a larger one (negating it, joining it with ``&&``/``||``,
making it a branch, a loop body or the body of ``cel.bind``) never lowers the estimated maximum, and
every estimate is a range (min ≤ max). Random selectors are built from the forms selectors use on the
``device`` variable; each is checked to compile with the CEL library, so it is a selector Kubernetes
would read.
"""

from __future__ import annotations

import cel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler.dra.cel_cost import estimate_cost

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

DOMAINS = st.sampled_from(["gpu.nvidia.com", "resource.kubernetes.io", "dra.net"])
NAMES = st.sampled_from(["productName", "type", "index", "pcieRoot", "uuid"])
TEXT = st.text(alphabet="abcxyz -._", max_size=30)

ATOMS = st.one_of(
    st.just("true"),
    TEXT.map(lambda t: f"device.driver == '{t}'"),
    st.tuples(DOMAINS, NAMES, TEXT).map(lambda a: f"device.attributes['{a[0]}'].{a[1]} == '{a[2]}'"),
    st.tuples(DOMAINS, NAMES, st.integers(0, 99)).map(lambda a: f"device.attributes['{a[0]}'].{a[1]} > {a[2]}"),
    st.tuples(NAMES, DOMAINS).map(lambda a: f"'{a[0]}' in device.attributes['{a[1]}']"),
    st.tuples(DOMAINS, TEXT).map(lambda a: f"device.attributes['{a[0]}'].productName.startsWith('{a[1]}')"),
    DOMAINS.map(lambda d: f"device.capacity['{d}'].memory.isGreaterThan(quantity('40Gi'))"),
    TEXT.map(lambda t: f"device.attributes.exists(d, d == '{t}')"),
)


def wraps(inner: str) -> st.SearchStrategy[str]:
    """The contexts an expression can be put in, each holding ``inner`` once."""
    other = ATOMS
    return st.one_of(
        st.just(f"!({inner})"),
        other.map(lambda o: f"({inner}) && ({o})"),
        other.map(lambda o: f"({o}) || ({inner})"),
        st.tuples(other, other).map(lambda o: f"({o[0]}) ? ({inner}) : ({o[1]})"),
        st.just(f"device.attributes.exists(dom, ({inner}))"),
        st.just(f"device.attributes['gpu.nvidia.com'].all(name, ({inner}))"),
        st.just(f"[1, 2, 3].exists_one(i, ({inner}))"),
        st.just(f"[1, 2, 3].filter(i, ({inner})).size() > 0"),
        st.just(f"cel.bind(nv, device.attributes['gpu.nvidia.com'], ({inner}))"),
    )


SELECTORS = st.recursive(ATOMS, lambda inner: inner.flatmap(wraps), max_leaves=6)


@SETTINGS
@given(st.data())
def test_putting_a_selector_inside_a_larger_one_never_lowers_its_estimated_maximum(data: st.DataObject) -> None:
    inner = data.draw(SELECTORS, label="inner")
    outer = data.draw(wraps(inner), label="outer")
    cel.compile(outer)  # a selector the library (and Kubernetes) parses
    low, high = estimate_cost(inner)
    outer_low, outer_high = estimate_cost(outer)
    assert low <= high and outer_low <= outer_high
    assert outer_high >= high
