"""The kinds of manifest objects kplan expands into pods: a Pod, or one of the workload kinds whose
controllers create them (kplan.api.workloads)."""

WORKLOAD_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "Job", "CronJob", "DaemonSet")
