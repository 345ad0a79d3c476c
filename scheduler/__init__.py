"""gang-scheduler: an all-or-nothing Kubernetes scheduler for PodGroup / CompositePodGroup gangs."""

__version__ = "0.1.0"
