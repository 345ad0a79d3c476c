"""Group trees and their readiness; pure, no Kubernetes client."""

from scheduler.groups.index import GroupIndex, build_trees
from scheduler.groups.tree import Composite, Forest, Group, GroupTree, Leaf, Membership, OrphanPod, TreeState

__all__ = [
    "Composite",
    "Forest",
    "Group",
    "GroupIndex",
    "GroupTree",
    "Leaf",
    "Membership",
    "OrphanPod",
    "TreeState",
    "build_trees",
]
