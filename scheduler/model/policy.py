"""policy/v1 PodDisruptionBudget: the fields preemption reads to prefer victims that break no budget.

Shape per the v1.37 OpenAPI schema (``io.k8s.api.policy.v1.PodDisruptionBudget``). The scheduler
never evicts through the Eviction API (it deletes victims, as kube-scheduler does), so a budget is
a preference only: preemption tries to keep the pods whose eviction would exceed
``status.disruptionsAllowed`` (kube-scheduler's ``FilterVictimsWithPDBViolation``).
"""

from __future__ import annotations

from pydantic import Field

from scheduler.model.base import Int32, KubeModel, ObjectMeta, Time
from scheduler.model.pod import LabelSelector

API_VERSION = "policy/v1"


class PodDisruptionBudgetSpec(KubeModel):
    """``policy/v1 PodDisruptionBudgetSpec``: only the selector is read (the counts come from the status).

    ``selector`` None matches no pod; an empty selector (``{}``) matches every pod of the namespace
    (``metav1.LabelSelectorAsSelector``, as kube-scheduler's ``FilterVictimsWithPDBViolation`` uses it).
    """

    selector: LabelSelector | None = None


class PodDisruptionBudgetStatus(KubeModel):
    """``policy/v1 PodDisruptionBudgetStatus``: how many more pods may be disrupted now, and the pods
    the eviction API has already counted (by pod name) that the controller has not seen go yet."""

    disruptions_allowed: Int32 = 0
    disrupted_pods: dict[str, Time] = {}


class PodDisruptionBudget(KubeModel):
    """``policy/v1 PodDisruptionBudget``."""

    api_version: str = API_VERSION
    kind: str = "PodDisruptionBudget"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: PodDisruptionBudgetSpec = Field(default_factory=PodDisruptionBudgetSpec)
    status: PodDisruptionBudgetStatus = Field(default_factory=PodDisruptionBudgetStatus)
