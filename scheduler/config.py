"""Settings, from flags and ``GANG_SCHEDULER_*`` environment variables (pydantic-settings).

Each setting documents its unit and why its default is what it is. The command line derives one
flag per setting from the field (``scheduler.cli``), and every rule a value must follow is checked
here — ranges, ``HOST:PORT``, names as the API server would accept them, and the rules between
settings (``lease_duration_s > renew_deadline_s > retry_period_s``, ``backoff_initial_s <=
backoff_max_s``) — so a flag and its variable get the same check and the same message, and ``run``
refuses a bad value before it starts. The chart's ``values.schema.json`` and its ``validate``
template mirror these rules.

Kept light: importing it must not import the framework, numpy or a Kubernetes client, so that
``--help`` and a setting error answer at once.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from scheduler.env import ENV_PREFIX, MAX_PORT
from scheduler.scoring import Scoring

if TYPE_CHECKING:
    from scheduler.framework.plan import SolverConfig

_NAMESPACE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
"""A namespace name is an RFC 1123 DNS label (apimachinery ``IsDNS1123Label``), at most 63 characters."""
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
"""An RFC 1123 DNS subdomain (apimachinery ``IsDNS1123Subdomain``), at most 253 characters: what the API server
accepts as a pod's ``spec.schedulerName`` and as an object's name (the Lease's)."""

SERVICE_ACCOUNT_NAMESPACE = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
"""The file in which the kubelet gives a pod its own namespace (with the service account token)."""


def host_port(value: str) -> tuple[str, int]:
    """``HOST:PORT`` → ``(host, port)``: ``0.0.0.0:10251``, ``[::]:10251`` (an IPv6 host in brackets, returned
    without them), ``:10251`` (host empty: every address). ``PORT`` is 0–65535; 0 lets the system pick a free
    port (tests use it).

    Raises ``PydanticCustomError`` saying what is expected.
    """
    host, colon, port = value.rpartition(":")
    if not colon or not port:
        raise PydanticCustomError("host_port", "expected HOST:PORT (e.g. 0.0.0.0:10251)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise PydanticCustomError("host_port", "expected HOST:PORT, an IPv6 host in brackets ([::]:10251)")
    if not port.isdigit() or int(port) > MAX_PORT:
        raise PydanticCustomError("host_port", "the port {port} is not a number from 0 to 65535", {"port": repr(port)})
    return host, int(port)


def _dns_name(value: str, pattern: re.Pattern[str], limit: int, what: str) -> str:
    if not (len(value) <= limit and pattern.fullmatch(value)):
        raise PydanticCustomError("dns_name", "{what} (lowercase letters, digits, '-'{dots}; at most {limit} "
                                  "characters)", {"what": what, "limit": limit,
                                                  "dots": " and '.'" if pattern is _SUBDOMAIN else ""})
    return value


def own_namespace(path: str = SERVICE_ACCOUNT_NAMESPACE) -> str:
    """The namespace the scheduler runs in: its pod's (``path``, the service account's namespace file), else
    ``default`` (outside a cluster: the namespace a client uses when none is given)."""
    try:
        with open(path, encoding="utf-8") as file:
            return file.read().strip() or "default"
    except OSError:
        return "default"


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
        description="spec.schedulerName of the pods this scheduler places (others are left to their scheduler).",
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
    unschedulable_retry_s: float = Field(
        default=300.0, gt=0, description="How long a root that found no placement waits for a cluster event that "
        "may help it (a node added, a pod deleted, ...: the queueing hints of the plugins that rejected it) before "
        "it is tried again anyway, seconds (kube-scheduler's podMaxInUnschedulablePodsDuration). Such an event "
        "moves it back once its backoff has ended.")
    api_discovery_interval_s: float = Field(
        default=30.0, gt=0, description="How often the APIs the cluster did not serve are looked for again, "
        "seconds: a PodGroup API or scheduler-plugins' CRD, CompositePodGroups, DRA's kinds or a storage kind "
        "served later is then watched without a restart (kube-controller-manager's garbage collector re-reads "
        "discovery every 30 s); the operator, whose handlers are made for one group API, stops instead when "
        "another is served, to be started again for it.")
    bind_concurrency: int = Field(default=16, ge=1, description="Binding calls in flight at once.")
    client_qps: float = Field(default=50.0, ge=0, description="Client-side requests per second (client-go's "
                              "default for kube-scheduler is 50); 0 disables the limit.")
    client_burst: int = Field(default=100, ge=1, description="Requests allowed above the QPS in a burst.")
    bind_address: str = Field(default="0.0.0.0:10251", description="HOST:PORT of /healthz, /readyz, /metrics "
                              "(10251 was kube-scheduler's insecure health port; ours serves no secrets); an IPv6 "
                              "host in brackets ([::]:10251); port 0: a free one.")
    leader_elect: bool = Field(default=True, description="Elect a leader through a Lease so two replicas "
                               "never schedule at once.")
    lease_namespace: str = Field(default="", description="Namespace of the leader Lease; empty: the namespace "
                                 "the scheduler runs in (its pod's, as the Helm chart and the plain manifests "
                                 "deploy it), `default` outside a cluster.")
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
    binding_conditions_timeout_s: float = Field(
        default=600.0, gt=0, description="How long a plan waits, after writing its ResourceClaims, for the "
        "bindingConditions of their devices to become True in the claims' status.devices before every claim is "
        "rolled back and those devices are left out of the next attempts, seconds. kube-scheduler's default "
        "(DynamicResourcesArgs.bindingTimeout, KEP-5007): a driver attaching a fabric or preparing a device may "
        "take minutes.")
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

    @field_validator("scheduler_name", "lease_name")
    @classmethod
    def _object_name(cls, value: str) -> str:
        return _dns_name(value, _SUBDOMAIN, 253, "not a DNS subdomain name")

    @field_validator("lease_namespace")
    @classmethod
    def _lease_namespace(cls, value: str) -> str:
        return value and _dns_name(value, _NAMESPACE, 63, "not a namespace name")

    @field_validator("bind_address")
    @classmethod
    def _bind_address(cls, value: str) -> str:
        host_port(value)
        return value

    @field_validator("backoff_max_s")
    @classmethod
    def _backoff_max(cls, value: float, info: ValidationInfo) -> float:
        """kube-scheduler's rule (``validation.go``: podMaxBackoffSeconds >= podInitialBackoffSeconds)."""
        first = info.data.get("backoff_initial_s")  # absent when that value was refused itself
        if first is not None and value < first:
            raise PydanticCustomError("backoff", "must not be below the first backoff ({first} s)",
                                      {"first": f"{first:g}"})
        return value

    @field_validator("renew_deadline_s", "retry_period_s")
    @classmethod
    def _lease_timing(cls, value: float, info: ValidationInfo) -> float:
        """``lease_duration_s > renew_deadline_s > retry_period_s`` when electing a leader (``live/leader.py``: the
        leader stops before a follower may take over, and can retry a renewal before its deadline; client-go's
        ``NewLeaderElector`` refuses the same)."""
        longer, what = (("lease_duration_s", "the lease duration") if info.field_name == "renew_deadline_s"
                        else ("renew_deadline_s", "the renew deadline"))
        bound = info.data.get(longer)  # absent when that value was refused itself
        if info.data.get("leader_elect", True) and bound is not None and not value < bound:
            raise PydanticCustomError("lease_timing", "must be shorter than {what} ({bound} s)",
                                      {"what": what, "bound": f"{bound:g}"})
        return value

    @property
    def bind_host_port(self) -> tuple[str, int]:
        """:attr:`bind_address` as ``(host, port)`` (:func:`host_port`; an empty host: ``0.0.0.0``)."""
        host, port = host_port(self.bind_address)
        return host or "0.0.0.0", port

    def solver(self) -> SolverConfig:
        """The solver's part of the settings, as a value."""
        from scheduler.framework.plan import SolverConfig  # the framework package is not loaded for settings alone

        return SolverConfig(scoring=self.scoring, search_budget=self.search_budget)
