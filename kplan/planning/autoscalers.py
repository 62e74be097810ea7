"""HorizontalPodAutoscalers: the replicas they give the manifests' workloads, and their headroom.

An HPA of the snapshot or of the manifests (one of the manifests replaces the snapshot's of the
same namespace and name) scales the workload its scaleTargetRef names. `kplan check` checks such a
workload at the replica count the autoscaler keeps it at: its own count between minReplicas and
maxReplicas, or with `--at-max` maxReplicas, the count of the peak. `kplan capacity` compares what
fits with maxReplicas.
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

from kplan.api.autoscaling import HorizontalPodAutoscaler
from kplan.api.workloads import Manifests, Workload
from kplan.errors import InputError

SCALED_KINDS = ("Deployment", "ReplicaSet", "StatefulSet")  # the workloads with a scale subresource


def by_target(snapshot_hpas: Iterable[HorizontalPodAutoscaler],
              manifest_hpas: Iterable[HorizontalPodAutoscaler]) -> dict[tuple[str, str, str], HorizontalPodAutoscaler]:
    """The HPAs by the (kind, namespace, name) they scale; two on one workload are an input error
    (the autoscaler refuses to scale a workload two HPAs claim)."""
    named = {(h.namespace, h.name): h for h in snapshot_hpas}
    named.update({(h.namespace, h.name): h for h in manifest_hpas})
    out: dict[tuple[str, str, str], HorizontalPodAutoscaler] = {}
    for hpa in named.values():
        other = out.setdefault(hpa.target, hpa)
        if other is not hpa:
            kind, ns, name = hpa.target
            raise InputError(f"two HorizontalPodAutoscalers scale {kind} {ns}/{name}: {other.name} ({other.source}) "
                             f"and {hpa.name} ({hpa.source}); the autoscaler scales neither")
    return out


def scale(manifests: Manifests, snapshot_hpas: Sequence[HorizontalPodAutoscaler], at_max: bool) -> int:
    """Sets each autoscaled workload of the manifests to the replicas its HPA keeps it at (maxReplicas
    with `at_max`), with the HPA in its `hpa`; returns how many workloads an HPA scales."""
    hpas = by_target(snapshot_hpas, manifests.hpas)
    scaled = 0
    for i, w in enumerate(manifests.workloads):
        hpa = hpas.get((w.kind, w.namespace, w.name))
        if hpa is None or w.kind not in SCALED_KINDS:
            continue
        replicas = hpa.replicas(w.wanted or 0, at_max)
        out = w.with_replicas(replicas) if replicas != w.wanted else w
        out.hpa = hpa.to_dict(replicas, at_max)
        manifests.workloads[i] = out
        scaled += 1
    return scaled


def headroom(hpa: HorizontalPodAutoscaler, w: Workload, running: int, more: int) -> dict[str, Any]:
    """How far the autoscaler can scale the workload on the cluster: the replicas running and the
    more that fit, up to maxReplicas (the `hpa` of a CapacityReport)."""
    fit = min(hpa.max_replicas, running + more)
    return {"name": f"{hpa.namespace}/{hpa.name}", "source": hpa.source, "minReplicas": hpa.min_replicas,
            "maxReplicas": hpa.max_replicas, "running": running, "fit": fit,
            "summary": f"{w.name}: {fit} of maxReplicas {hpa.max_replicas} fit ({w.kind} {w.namespace}/{w.name}, "
                       f"{running} running; HorizontalPodAutoscaler {hpa.namespace}/{hpa.name})"}
