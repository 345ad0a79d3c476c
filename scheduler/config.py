"""Settings, from flags and ``GANG_SCHEDULER_*`` environment variables (pydantic-settings).

Each setting documents its unit and why its default is what it is.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from scheduler.framework.plan import Scoring, SolverConfig


class Settings(BaseSettings):
    """Scheduler settings shared by ``simulate`` and ``run``."""

    model_config = SettingsConfigDict(env_prefix="GANG_SCHEDULER_", extra="ignore")

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

    # -- run -------------------------------------------------------------------------
    kubeconfig: str | None = Field(default=None, description="Path to a kubeconfig; unset: $KUBECONFIG, "
                                   "~/.kube/config, then the in-cluster service account.")
    namespaces: list[str] = Field(default_factory=list, description="Namespaces whose pods we schedule; "
                                  "empty: all. Pods of every namespace are still watched, their usage counts.")
    backoff_initial_s: float = Field(default=1.0, gt=0, description="First backoff of a failed root, seconds "
                                     "(kube-scheduler's podInitialBackoffSeconds).")
    backoff_max_s: float = Field(default=60.0, gt=0, description="Backoff cap, seconds (design §7: gangs are "
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

    def solver(self) -> SolverConfig:
        """The solver's part of the settings, as a value."""
        return SolverConfig(scoring=self.scoring, search_budget=self.search_budget)
