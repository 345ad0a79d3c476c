"""The emulated API server fixtures of the integration tests (``k8s``, ``kube``), for test_deployment_runs.py."""

from tests.integration.conftest import k8s, kube

__all__ = ["k8s", "kube"]
