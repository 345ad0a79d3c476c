"""The emulated API server fixtures of the integration tests (``k8s``, ``kube``, the ``kubernetes`` marker), for
test_deployment_runs.py and test_kube_versions.py."""

from tests.integration.conftest import k8s, kube, pytest_configure

__all__ = ["k8s", "kube", "pytest_configure"]
