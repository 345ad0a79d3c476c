"""Priorities from PriorityClasses: what a pod or a group's own fields give, the global default, the classes'
``preemptionPolicy``.

A pod's priority is ``spec.priority``, else the value of its ``priorityClassName``, else the class marked
``globalDefault`` (the first by name when several are), else 0 — the priority admission plugin's rule
(``plugin/pkg/admission/priority``). A group's own priority is its ``priority``, else its
``priorityClassName``'s value; a tree's priority combines them (:mod:`scheduler.groups.index`). No I/O.
"""

from __future__ import annotations

from scheduler.model.pod import Pod
from scheduler.model.scheduling import CompositePodGroup, PodGroup, PriorityClass


class PriorityClasses:
    """The PriorityClasses fed so far (:meth:`set`): their values by name and the global default."""

    def __init__(self) -> None:
        self._classes: dict[str, PriorityClass] = {}
        self.class_value: dict[str, int] = {}
        self.default_priority = 0

    def set(self, name: str, pc: PriorityClass | None) -> None:
        """The PriorityClass ``name`` is now ``pc`` (None: deleted)."""
        if pc is None:
            self._classes.pop(name, None)
        else:
            self._classes[name] = pc
        self.class_value = {c.metadata.name: c.value for c in self._classes.values()}
        self.default_priority = next((c.value for c in sorted(self._classes.values(), key=lambda c: c.metadata.name)
                                      if c.global_default), 0)

    def pod_priority(self, pod: Pod) -> int:
        """``spec.priority``, else the value of ``priorityClassName``, else the global default."""
        if pod.spec.priority is not None:
            return pod.spec.priority
        if pod.spec.priority_class_name:
            return self.class_value.get(pod.spec.priority_class_name, self.default_priority)
        return self.default_priority

    def group_priority(self, obj: PodGroup | CompositePodGroup) -> int | None:
        """The group's ``priority``, else its ``priorityClassName``'s value, else None."""
        if obj.spec.priority is not None:
            return obj.spec.priority
        if obj.spec.priority_class_name and obj.spec.priority_class_name in self.class_value:
            return self.class_value[obj.spec.priority_class_name]
        return None

    def class_policy(self, class_name: str | None) -> str | None:
        """The ``preemptionPolicy`` of PriorityClass ``class_name``, if it exists and sets one."""
        pc = self._classes.get(class_name or "")
        return pc.preemption_policy if pc is not None else None
