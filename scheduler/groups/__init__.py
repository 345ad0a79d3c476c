"""Group trees and their readiness; pure, no Kubernetes client."""

from scheduler.groups.tree import (
    Composite,
    Forest,
    Group,
    GroupKey,
    GroupTree,
    Leaf,
    OrphanPod,
    TreeState,
    build_trees,
)

__all__ = [
    "Composite",
    "Forest",
    "Group",
    "GroupKey",
    "GroupTree",
    "Leaf",
    "OrphanPod",
    "TreeState",
    "build_trees",
]
