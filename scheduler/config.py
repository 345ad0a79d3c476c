"""Settings, from flags and ``GANG_SCHEDULER_*`` environment variables (pydantic-settings).

Each setting documents its unit and why its default is what it is. The command line derives one
typed flag per setting from the field's annotation and constraints (``scheduler.cli``), so a
setting is declared here once.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from scheduler.framework.plan import Scoring, SolverConfig

ENV_PREFIX = "GANG_SCHEDULER_"

_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
"""A namespace name is an RFC 1123 DNS label (apimachinery ``IsDNS1123Label``), at most 63 characters."""


def namespace_list(value: Any) -> list[str]:
    """The ``namespaces`` setting from what a user writes: ``"ml,research"`` (the variable, or one
    flag), several flags (``["ml", "research,infra"]``, each split on commas), or a JSON list
    (``'["ml","research"]'``, as the Helm chart renders it). Entries are stripped; empty ones (a
    trailing comma, an empty variable) are dropped and repeats kept once, in order.

    Raises ``PydanticCustomError`` naming the first entry that is not a namespace name, or when a
    JSON value is not a list of strings.
    """
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except ValueError as exc:
                raise PydanticCustomError("namespaces_json", "not a JSON list: {error}", {"error": str(exc)}) from exc
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise PydanticCustomError("namespaces_json", "a JSON value must be a list of strings")
        else:
            value = [text]
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise PydanticCustomError("namespaces_type", "must be namespace names separated by commas")
    names: list[str] = []
    for entry in value:
        for name in (part.strip() for part in entry.split(",")):
            if name and not (len(name) <= 63 and _NAMESPACE.fullmatch(name)):
                raise PydanticCustomError(
                    "namespace_name", "{name} is not a namespace name (lowercase letters, digits and '-', "
                    "at most 63 characters; separate names with commas)", {"name": repr(name)})
            if name and name not in names:
                names.append(name)
    return names


class Settings(BaseSettings):
    """Scheduler settings shared by ``simulate`` and ``run``."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    scheduler_name: str = Field(
        default="gang-scheduler",
        description="spec.schedulerName of the pods we own; the product's documented name.",
    )
    scoring: Scoring = Field(
        default="pack",
        description="pack (fewest nodes, keep accelerator nodes whole: accelerators are the scarce, "
        "expensive resource) or spread.",
    )
    search_budget: int = Field(
        default=256,
        ge=1,
        description="Most subtree placements tried per root; bounds a failing search's time.",
    )
    preemption: bool = Field(
        default=True,
        description="A root that does not fit may evict whole groups of strictly lower priority "
        "(workload-aware preemption, on by default as in Kubernetes v1.37); off: it waits.",
    )
    starvation_after_s: float = Field(
        default=300.0,
        gt=0,
        description="Seconds a root may stay unschedulable while equal-priority roots keep taking freed room "
        "before it gets a reservation (5 min: kube-scheduler's podMaxInUnschedulablePodsDuration, the "
        "longest it leaves a pod without a retry).",
    )
    reservation_s: float = Field(
        default=600.0,
        gt=0,
        description="Seconds a starving root's reservation holds the nodes of its best plan before it "
        "expires (10 min: twice the starvation time, so smaller roots get room again if it still "
        "does not fit).",
    )

    # -- run -------------------------------------------------------------------------
    kubeconfig: str | None = Field(default=None, description="Path to a kubeconfig; unset: $KUBECONFIG, "
                                   "~/.kube/config, then the in-cluster service account.")
    namespaces: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="Namespaces whose pods we schedule, separated by commas; empty: all. "
        "Pods of every namespace are still watched, their usage counts.")
    """``NoDecode``: pydantic-settings would read the variable as JSON only; :func:`namespace_list`
    takes the comma-separated form too."""
    backoff_initial_s: float = Field(default=1.0, gt=0, description="First backoff of a failed root, seconds "
                                     "(kube-scheduler's podInitialBackoffSeconds).")
    backoff_max_s: float = Field(default=60.0, gt=0, description="Backoff cap, seconds (gangs are "
                                 "large and retried on events anyway, so longer than kube's 10 s).")
    bind_concurrency: int = Field(default=16, ge=1, description="Binding calls in flight at once.")
    client_qps: float = Field(default=50.0, ge=0, description="Client-side requests per second (client-go's "
                              "default for kube-scheduler is 50); 0 disables the limit.")
    client_burst: int = Field(default=100, ge=1, description="Requests allowed above the QPS in a burst.")
    bind_address: str = Field(default="0.0.0.0:10251", description="host:port of /healthz, /readyz, /metrics "
                              "(10251 was kube-scheduler's insecure health port; ours serves no secrets).")
    leader_elect: bool = Field(default=True, description="Elect a leader through a Lease so two replicas "
                               "never schedule at once.")
    lease_namespace: str = Field(default="kube-system", description="Namespace of the leader Lease.")
    lease_name: str = Field(default="gang-scheduler", description="Name of the leader Lease.")
    lease_duration_s: float = Field(default=15.0, gt=0, description="How long a Lease holds without "
                                    "renewal, seconds (client-go default).")
    renew_deadline_s: float = Field(default=10.0, gt=0, description="How long the leader keeps trying to "
                                    "renew before it stops scheduling, seconds (client-go default).")
    retry_period_s: float = Field(default=2.0, gt=0, description="Pause between election attempts, "
                                  "seconds (client-go default).")
    event_interval_s: float = Field(default=60.0, gt=0, description="An identical FailedScheduling event "
                                    "is sent at most once per this many seconds per pod (flood control).")
    volume_binding_timeout_s: float = Field(
        default=300.0, gt=0, description="How long a plan waits, after writing volume.kubernetes.io/selected-node "
        "(or a PV's claimRef), for its WaitForFirstConsumer PersistentVolumeClaims to be bound before it is rolled "
        "back, seconds. Half kube-scheduler's bindTimeoutSeconds (600): the whole gang's capacity is held unbound "
        "while it waits, a CSI provisioner creates a disk in seconds to a few minutes, and the annotations are "
        "left on rollback, so a retry resumes waiting for the same volumes.")
    gang_repair_timeout_s: float = Field(
        default=300.0, gt=0, description="How long a gang may stay partial — members bound, fewer than minCount "
        "(a bind failed, the scheduler stopped mid-plan, members or their node went away) — while it is tried "
        "first on the room it holds, seconds; then a disruptionMode 'all' gang is torn down whole (its bound "
        "members evicted, so it can be placed again whole) and a 'single' one is reported (Event, metric). 5 min: "
        "kube-scheduler's podMaxInUnschedulablePodsDuration.")

    @field_validator("namespaces", mode="before")
    @classmethod
    def _namespaces(cls, value: Any) -> list[str]:
        return namespace_list(value)

    def solver(self) -> SolverConfig:
        """The solver's part of the settings, as a value."""
        return SolverConfig(scoring=self.scoring, search_budget=self.search_budget)
