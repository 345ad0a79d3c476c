"""The binding cycle: a plan's PreBind plugins, then its Bind plugin, with rollback — one list for ``run`` and
``simulate``.

kube-scheduler's binding cycle (``pkg/scheduler/schedule_one.go`` ``bindingCycle``) runs PreBind plugins, then
the Bind plugin, and Unreserve on any failure. Here it runs per plan (the whole gang), against an
:class:`~scheduler.framework.interface.ApiWriter`: the live one writes to the API server
(``scheduler.live.api_writer``), the recording one applies the same writes to the cache as the watch would
show them (``scheduler.offline.recorder``). Both run :func:`default_plugins`, so ``simulate`` makes the writes
``run`` makes. Modules: ``transaction.py`` (the runner), ``claims.py``, ``volumes.py`` (the PreBind plugins),
``pods.py`` (the Bind plugin, whose Bindings carry the durable intent), ``wait.py`` (the wait for a condition
PreBind steps share).
This layer talks to the API only through the writer: it imports no client.
"""
