"""Reuse the integration fixtures (emulated API server ``k8s`` and client ``kube``)."""

from tests.integration.conftest import k8s, kube  # noqa: F401
