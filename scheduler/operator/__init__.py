"""The operator (``gang-scheduler operator``): gangs for the Jobs people already run, built on kopf.

A workload labelled ``gang-scheduler.io/gang: "true"`` (a Job, JobSet, PyTorchJob or
LeaderWorkerSet) gets the PodGroups (and, for multi-role workloads, the CompositePodGroup) that
make its pods one all-or-nothing gang, owned by the workload and kept in step when it is
scaled; its pods are pointed at gang-scheduler and at their group as they are created; malformed
PodGroups and CompositePodGroups are refused at ``kubectl apply`` time with the scheduler's own
messages. Modules: ``labels`` (the names we read and write), ``workloads`` (the workload kinds
and the gang each one is), ``groups`` (the PodGroup / CompositePodGroup bodies for the API the
cluster serves), ``apis`` (which group API that is), ``validation`` (the checks of the validating
webhook), ``certificates`` (the webhook server's self-signed certificate), ``handlers`` (the kopf
handlers and webhooks), ``runner`` (kopf's settings and the process). Architecture §18.
"""
