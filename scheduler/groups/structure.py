"""Which group hangs under which: children lists and each group's *head*, from the back-references.

Children point *up* (``spec.parentCompositePodGroupName``); a tree hangs from its head: the root, or the
highest group found when a parent is missing (then the tree is Invalid), or the lexically first group of a
cycle. Rebuilt from every group at once (O(groups)) only when a group was added, removed or re-parented
(:meth:`Structure.ensure`); the heads whose trees that changed are kept for the index's next refresh
(:meth:`Structure.take_changed`). No I/O; never raises on bad input.
"""

from __future__ import annotations

from scheduler.groups.tree import MAX_DEPTH
from scheduler.model.scheduling import CompositePodGroup, GroupKey, PodGroup

Name = tuple[str, str]
"""(namespace, name) of a group."""
Node = tuple[str, Name]
"""A group object during assembly: ``(kind, (namespace, name))``."""


class Structure:
    """The children and heads of the groups in ``pgs`` and ``cpgs`` (the index's own mappings, read as they are)."""

    def __init__(self, pgs: dict[Name, PodGroup], cpgs: dict[Name, CompositePodGroup]) -> None:
        self.pgs = pgs
        self.cpgs = cpgs
        self.children: dict[Name, set[Node]] = {}
        self.heads: dict[Node, tuple[Node, str | None]] = {}
        """Group → (the head its tree hangs from, why that tree is invalid or None)."""
        self.under: dict[Node, list[Name]] = {}
        """Every PodGroup under each head, however deep (membership does not depend on the depth cut)."""
        self.dirty = False
        """A group was added, removed or re-parented since the last :meth:`ensure`."""
        self._changed: set[Node] = set()

    def head_of(self, node: Node) -> Node | None:
        """The head ``node`` hangs from as last computed, or None when it is not known yet."""
        known = self.heads.get(node)
        return known[0] if known is not None else None

    def ensure(self) -> None:
        """Rebuild the children lists and heads if :attr:`dirty`, keeping every head whose tree changed for
        :meth:`take_changed`."""
        if not self.dirty:
            return
        self.dirty = False
        before = dict(self.heads)
        self._rebuild()
        for node in before.keys() | self.heads.keys():
            old, new = before.get(node), self.heads.get(node)
            if old != new:
                if old is not None:
                    self._changed.add(old[0])
                if new is not None:
                    self._changed.add(new[0])

    def take_changed(self) -> set[Node]:
        """The heads (old and new) whose trees a rebuild changed since the last call."""
        changed, self._changed = self._changed, set()
        return changed

    def _rebuild(self) -> None:
        """Children lists and every group's head, from the back-references (O(groups))."""
        self.children = {}
        nodes: list[Node] = [("PodGroup", k) for k in sorted(self.pgs)]
        nodes += [("CompositePodGroup", k) for k in sorted(self.cpgs)]
        for node in nodes:
            parent = self.parent_of(node)
            if parent is not None and parent in self.cpgs:
                self.children.setdefault(parent, set()).add(node)
        self.heads = {}
        self.under = {}
        for node in nodes:
            head, _ = self.head(node)
            if node[0] == "PodGroup":
                self.under.setdefault(head, []).append(node[1])

    def parent_of(self, node: Node) -> Name | None:
        kind, nk = node
        obj: PodGroup | CompositePodGroup = self.pgs[nk] if kind == "PodGroup" else self.cpgs[nk]
        parent = obj.spec.parent_composite_pod_group_name
        return (nk[0], parent) if parent else None

    def head(self, node: Node) -> tuple[Node, str | None]:
        """Walk up from ``node`` to the group its tree hangs from, and why that tree is invalid.

        Returns ``(root, None)`` for a sound chain; ``(group, "parent … not found")`` when a parent
        is missing (the tree hangs from the last group found); ``(first member, "cycle …")`` when
        the chain loops (the lexically first group of the loop stands for it).
        """
        chain = [node]
        seen = {node}
        result: tuple[Node, str | None]
        while True:
            known = self.heads.get(chain[-1])
            if known is not None:
                result = known
                break
            parent = self.parent_of(chain[-1])
            if parent is None:
                result = (chain[-1], None)
                break
            if parent not in self.cpgs:
                result = (chain[-1], f"parent CompositePodGroup {parent[0]}/{parent[1]} not found")
                break
            nxt: Node = ("CompositePodGroup", parent)
            if nxt in seen:
                loop = chain[chain.index(nxt):]
                first = loop.index(min(loop))
                loop = loop[first:] + loop[:first]  # start at the lexically first group: one message per cycle
                names = " → ".join(n for _, (_, n) in [*loop, loop[0]])
                result = (loop[0], f"cycle in parentCompositePodGroupName: {names}")
                break
            chain.append(nxt)
            seen.add(nxt)
        for member in chain:  # everything on the way up hangs from the same head (memo: O(groups) overall)
            self.heads[member] = result
        return result

    def leaves_under(self, key: GroupKey) -> list[Name]:
        """The PodGroups at or under group ``key`` (a PodGroup: itself), as the groups are now; cycle-safe,
        depth-bounded like the trees. The trees themselves are rebuilt only by the index's refresh."""
        if key.kind == "PodGroup":
            return [(key.namespace, key.name)]
        self.ensure()
        out: list[Name] = []
        stack: list[tuple[Node, int]] = [(("CompositePodGroup", (key.namespace, key.name)), 1)]
        seen: set[Node] = set()
        while stack:
            node, depth = stack.pop()
            if node in seen or depth > MAX_DEPTH + 1:
                continue
            seen.add(node)
            if node[0] == "PodGroup":
                out.append(node[1])
                continue
            stack.extend((child, depth + 1) for child in sorted(self.children.get(node[1], ())))
        return sorted(out)
