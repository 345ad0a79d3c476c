"""Names the settings and the command line share, importable without pydantic (``gang-scheduler version`` and
``--help`` load no more than this and Click)."""

ENV_PREFIX = "GANG_SCHEDULER_"
"""Every setting ``NAME`` is read from the variable ``GANG_SCHEDULER_<NAME>`` (pydantic-settings' ``env_prefix``)."""

MAX_PORT = 65535
"""The largest TCP port number."""
