"""policy/v1 PodDisruptionBudget: the fields preemption reads to prefer victims that break no budget.

Shape per the v1.37 OpenAPI schema (``io.k8s.api.policy.v1.PodDisruptionBudget``). The scheduler
never evicts through the Eviction API (it deletes victims, as kube-scheduler does), so a budget is
a preference only: preemption tries to keep the pods whose eviction would exceed
``status.disruptionsAllowed`` (kube-scheduler's ``FilterVictimsWithPDBViolation``).
"""

from __future__ import annotations

from pydantic import Field, model_validator

from scheduler.model.base import Int32, KubeModel, ObjectMeta, Time
from scheduler.model.pod import LabelSelector

API_VERSION = "policy/v1"


class PodDisruptionBudgetSpec(KubeModel):
    """``policy/v1 PodDisruptionBudgetSpec``: only the selector is read (the counts come from the status).

    ``selector`` None matches no pod; an empty selector (``{}``) matches every pod of the namespace
    (``metav1.LabelSelectorAsSelector``, as kube-scheduler's ``FilterVictimsWithPDBViolation`` uses it).
    ``minAvailable`` and ``maxUnavailable`` (a count or a percentage) are kept only to refuse a budget that
    sets both, as the API server does ("minAvailable and maxUnavailable cannot be both set",
    ``ValidatePodDisruptionBudgetSpec``); the controller turns them into ``status.disruptionsAllowed``.
    Raises ``ValueError`` (pydantic's ``ValidationError``) when both are set.
    """

    selector: LabelSelector | None = None
    min_available: int | str | None = None
    max_unavailable: int | str | None = None

    @model_validator(mode="after")
    def _one_of(self) -> PodDisruptionBudgetSpec:
        if self.min_available is not None and self.max_unavailable is not None:
            raise ValueError("minAvailable and maxUnavailable cannot be both set")
        return self


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
