"""Workloads as input: the pods their controllers would create, named and labelled as they would.

Pod, Deployment, ReplicaSet, StatefulSet, Job, CronJob and DaemonSet are accepted (in files,
`kind: List` and multi-document YAML). Each becomes a Workload whose `pods(nodes)` are the pods
the controllers would create, in creation order:

- Deployment: a ReplicaSet `<deployment>-<pod-template-hash>` whose selector is the Deployment's
  with `pod-template-hash` added to matchLabels (the deployment controller's getNewReplicaSet),
  pods `<replicaset>-<suffix>`, labelled `pod-template-hash`, owned by the ReplicaSet.
- ReplicaSet: pods `<replicaset>-<suffix>` owned by it.
- StatefulSet: pods `<name>-0 .. <name>-(N-1)`, with the pod-name and pod-index labels, hostname.
- Job: min(parallelism (default 1), completions) pods `<job>-<suffix>` (Indexed:
  `<job>-<index>-<suffix>` with the completion index as annotation and label, and hostname
  `<job>-<index>`), with the job-name and controller-uid labels, owned by the Job.
- CronJob: its jobTemplate as a Job `<cronjob>-<number>` owned by the CronJob.
- DaemonSet: one pod per node it would run on (the template's nodeSelector and required node
  affinity match and the node's NoSchedule/NoExecute taints are tolerated, with the daemon
  tolerations added), each pinned by a required node affinity `metadata.name In [node]`
  (daemonset_util.go's ReplaceDaemonSetPodNodeNameNodeAffinity), owned by the DaemonSet.

The ReplicaSet or StatefulSet that owns the pods is the Workload's `controller`: placed in the
simulated cluster with Services given among the manifests (kplan.sources.manifests), it gives
PodTopologySpread's default constraints their selector, as in a cluster. A manifest the API server
would refuse (no selector, one that does not select the template's pods, negative replicas…) is
an input error (kplan.api.validation).

Upstream draws the pod-template-hash from an FNV hash of the template and the name suffixes at
random; kplan derives both deterministically (SHA-256 of the template, and of the hash and the
replica's index), so the same manifests always give the same pod names. The spec of replicas of
one template is one shared, read-only dict: plugins may key caches on it (`Pod.spec` identity).
"""
from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from kplan.api.kinds import WORKLOAD_KINDS
from kplan.api.objects import Controller, Node, Pod, Service, Toleration, build
from kplan.api.validation import validate_manifest
from kplan.errors import InputError

# apimachinery's SafeEncodeString / utilrand alphabet (no vowels, no 0, 1, 3).
ALPHABET = "bcdfghjklmnpqrstvwxz2456789"

# AddOrUpdateDaemonPodTolerations (pkg/controller/daemon/util/daemonset_util.go).
DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
HOST_NETWORK_TOLERATION = ("node.kubernetes.io/network-unavailable", "NoSchedule")
# An Indexed Job's pods carry their index as this annotation and (PodIndexLabel) label.
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"


def _encode(digest: bytes, length: int) -> str:
    return "".join(ALPHABET[b % len(ALPHABET)] for b in digest[:length])


def template_hash(template: Mapping) -> str:
    """Returns a 10-character pod-template-hash, a deterministic function of the template."""
    text = json.dumps(template, sort_keys=True, separators=(",", ":"), default=str)
    return _encode(hashlib.sha256(text.encode()).digest(), 10)


def name_suffix(seed: str, index: int) -> str:
    """Returns the 5-character suffix of replica `index` (utilrand.String(5), made deterministic)."""
    return _encode(hashlib.sha256(f"{seed}/{index}".encode()).digest(), 5)


@dataclass
class Workload:
    """One manifest object and how to make its pods."""

    kind: str
    namespace: str
    name: str
    source: str
    wanted: int | None  # replicas asked for; None for a DaemonSet (depends on the nodes)
    make: Callable[[Sequence[Node] | None], list[Pod]] = field(repr=False)
    controller: Controller | None = None  # the ReplicaSet or StatefulSet owning the pods, for the cluster
    obj: Mapping | None = field(default=None, repr=False)  # the manifest object it was built from
    hpa: dict | None = None  # the HorizontalPodAutoscaler that set its replicas (the report's `hpa`)

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    def pods(self, nodes: Sequence[Node] | None = None) -> list[Pod]:
        return self.make(nodes)

    def with_replicas(self, replicas: int) -> "Workload":
        """The same workload asking for another number of replicas (as an autoscaler sets spec.replicas)."""
        obj = self.obj or {}
        return workload({**obj, "spec": {**(obj.get("spec") or {}), "replicas": replicas}}, self.source)


def _owner(kind: str, api: str, name: str, uid: str) -> dict[str, Any]:
    return {"apiVersion": api, "kind": kind, "name": name, "uid": uid, "controller": True,
            "blockOwnerDeletion": True}


def _uid(kind: str, namespace: str, name: str) -> str:
    h = hashlib.sha256(f"{kind}/{namespace}/{name}".encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _template(obj: Mapping, where: str, path: str = "spec.template") -> Mapping:
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    if not isinstance(node, Mapping) or not isinstance(node.get("spec"), Mapping):
        raise InputError(f"{path}.spec is missing", where)
    if not node["spec"].get("containers"):
        raise InputError(f"{path}.spec.containers is empty", where)
    return node


def _count(value: int | None, default: int) -> int:
    """A count of the manifest (validated: a non-negative integer), or its default when not given."""
    return default if value is None else value


def _pod(template: Mapping, spec: Mapping, name: str, namespace: str, labels: Mapping[str, str],
         owner: dict[str, Any], source: str, claim_templates: Mapping[str, tuple] | None = None,
         annotations: Mapping[str, str] | None = None) -> Pod:
    meta = template.get("metadata") or {}
    raw = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": namespace, "labels": dict(labels),
                        "annotations": {**(meta.get("annotations") or {}), **(annotations or {})},
                        "ownerReferences": [owner]},
           "spec": spec, "status": {"phase": "Pending"}}
    return manifest_pod(build("Pod", raw, source), claim_templates)


def manifest_pod(pod: Pod, claim_templates: Mapping[str, tuple] | None = None) -> Pod:
    """Marks a pod as one a manifest creates: its controllers create its claims first (a StatefulSet's
    claim templates, volume name -> (template, labels); its ephemeral volumes' claims)."""
    pod.claim_templates = dict(claim_templates or {})
    return pod


def _replicated(template: Mapping, namespace: str, prefix: str, owner: dict[str, Any], source: str,
                count: int, extra_labels: Mapping[str, str], seed: str) -> list[Pod]:
    spec = template["spec"]  # shared, read-only, across replicas
    labels = {**((template.get("metadata") or {}).get("labels") or {}), **extra_labels}
    return [_pod(template, spec, f"{prefix}-{name_suffix(seed, k)}", namespace, labels, owner, source)
            for k in range(count)]


def _replica_set(ns: str, name: str, where: str, template: Mapping, count: int,
                 extra: Mapping[str, str]) -> Callable:
    uid = _uid("ReplicaSet", ns, name)
    owner = _owner("ReplicaSet", "apps/v1", name, uid)
    return lambda nodes: _replicated(template, ns, name, owner, where, count, extra, uid)


def _with_label(selector: Mapping, key: str, value: str) -> dict:
    """labelsutil.CloneSelectorAndAddLabel: a copy of the selector with key=value in matchLabels."""
    out: dict[str, Any] = {"matchLabels": {**(selector.get("matchLabels") or {}), key: value}}
    if selector.get("matchExpressions") is not None:
        out["matchExpressions"] = copy.deepcopy(list(selector["matchExpressions"]))
    return out


def _controller(kind: str, ns: str, name: str, selector: Mapping) -> Controller:
    return Controller(kind, ns, name, _uid(kind, ns, name), selector)


def _job_pods(ns: str, name: str, spec: Mapping, template: Mapping, where: str) -> list[Pod]:
    parallelism = _job_count(spec)
    uid = _uid("Job", ns, name)
    owner = _owner("Job", "batch/v1", name, uid)
    base = {**((template.get("metadata") or {}).get("labels") or {}),
            "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
            "controller-uid": uid, "job-name": name}
    tpl_spec = template["spec"]
    if spec.get("completionMode") != "Indexed":
        return _replicated(template, ns, name, owner, where, parallelism, base, uid)
    pods = []
    for k in range(parallelism):  # the job controller's manageJob for a completion index
        labels = {**base, COMPLETION_INDEX: str(k)}
        pods.append(_pod(template, {**tpl_spec, "hostname": f"{name}-{k}"}, f"{name}-{k}-{name_suffix(uid, k)}", ns,
                         labels, owner, where, annotations={COMPLETION_INDEX: str(k)}))
    return pods


def _daemon_pods(ns: str, name: str, template: Mapping, where: str, nodes: Sequence[Node] | None) -> list[Pod]:
    if nodes is None:
        raise InputError(f"DaemonSet {ns}/{name}: its pods depend on the nodes; pass the cluster (--snapshot)", where)
    uid = _uid("DaemonSet", ns, name)
    owner = _owner("DaemonSet", "apps/v1", name, uid)
    spec = copy.deepcopy(dict(template["spec"]))
    tolerations = list(spec.get("tolerations") or [])
    wanted = list(DAEMON_TOLERATIONS) + ([HOST_NETWORK_TOLERATION] if spec.get("hostNetwork") else [])
    for key, effect in wanted:  # AddOrUpdateTolerationInPodSpec: replace an equal-key/effect one
        tolerations = [t for t in tolerations if not (t.get("key") == key and t.get("effect") == effect
                                                      and (t.get("operator") or "Equal") == "Exists")]
        tolerations.append({"key": key, "operator": "Exists", "effect": effect})
    spec["tolerations"] = tolerations
    revision = template_hash(template)
    labels = {**((template.get("metadata") or {}).get("labels") or {}),
              "controller-revision-hash": revision, "pod-template-generation": "1"}
    pods = []
    for k, node in enumerate(n for n in nodes if should_run(spec, n)):
        pod_spec = copy.deepcopy(spec)
        affinity = pod_spec.setdefault("affinity", {}) or {}
        pod_spec["affinity"] = affinity
        node_affinity = affinity.setdefault("nodeAffinity", {}) or {}
        affinity["nodeAffinity"] = node_affinity
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node.name]}]}]}
        pods.append(_pod(template, pod_spec, f"{name}-{name_suffix(uid, k)}", ns, labels, owner, where))
    return pods


def should_run(spec: Mapping, node: Node) -> bool:
    """Tells whether the DaemonSet controller would create a pod for the node (NodeShouldRunDaemonPod):
    the node matches nodeSelector and required node affinity, and NoSchedule/NoExecute taints are tolerated."""
    from kplan.api.node_selectors import node_selector_terms_mask
    from kplan.cluster.state import ClusterState
    selector = spec.get("nodeSelector") or {}
    if any(node.labels.get(k) != v for k, v in selector.items()):
        return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution"))
    if required:
        one = ClusterState([node], [])
        if not node_selector_terms_mask(required.get("nodeSelectorTerms"), one)[0]:
            return False
    tolerations = [Toleration(t.get("key") or "", t.get("operator") or "Equal", t.get("value") or "",
                              t.get("effect") or "") for t in spec.get("tolerations") or ()]
    return all(any(t.tolerates(taint) for t in tolerations)
               for taint in node.taints if taint.effect in ("NoSchedule", "NoExecute"))


def _validate_volumes(obj: Mapping, where: str) -> None:
    """The pod spec's volumes as the API server validates them (a claim reference names its claim, an
    ephemeral volume's claim template is a valid claim)."""
    from kplan.api.storage import pod_volumes
    from kplan.api.validation import TEMPLATE_PATHS, Invalid
    kind = obj.get("kind")
    path = "spec" if kind == "Pod" else TEMPLATE_PATHS.get(kind, "spec.template") + ".spec"
    spec: Any = obj
    for part in path.split("."):
        spec = spec.get(part) if isinstance(spec, Mapping) else None
    try:
        pod_volumes(spec if isinstance(spec, Mapping) else {}, path)
    except Invalid as err:
        name = (obj.get("metadata") or {}).get("name") or ""
        raise InputError(f'{kind} "{name}": {err}', where) from None


def _validate_strategy(obj: Mapping, where: str) -> None:
    """A Deployment's, StatefulSet's or DaemonSet's update strategy as the API server validates it."""
    from kplan.api.update_strategies import STRATEGIES
    from kplan.api.validation import Invalid
    check = STRATEGIES.get(obj.get("kind"))
    if check is None:
        return
    try:
        check(obj.get("spec") or {})
    except Invalid as err:
        raise InputError(f'{obj.get("kind")} "{(obj.get("metadata") or {}).get("name") or ""}": {err}', where) from None


def workload(obj: Mapping, where: str) -> Workload:
    """Builds the Workload of one manifest object (a Pod or one of WORKLOAD_KINDS); one the API server
    would refuse is an InputError naming the field."""
    built = _workload(obj, where)
    built.obj = obj
    return built


def _workload(obj: Mapping, where: str) -> Workload:
    kind = obj.get("kind")
    if kind == "Pod" or kind in WORKLOAD_KINDS:
        validate_manifest(obj, where)
        _validate_volumes(obj, where)
        _validate_strategy(obj, where)
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    ns = meta.get("namespace") or "default"
    if not name and kind != "Pod":
        raise InputError(f"{kind} without metadata.name", where)
    spec = obj.get("spec") or {}
    if kind == "Pod":
        pod = manifest_pod(build("Pod", obj, where))
        return Workload("Pod", pod.namespace, pod.name, where, 1, lambda nodes: [pod])
    if kind == "Deployment":
        template = _template(obj, where)
        count = _count(spec.get("replicas"), 1)
        rs_name = f"{name}-{template_hash(template)}"
        pth = rs_name.rsplit("-", 1)[1]
        rs = _controller("ReplicaSet", ns, rs_name, _with_label(spec["selector"], "pod-template-hash", pth))
        return Workload(kind, ns, name, where, count,
                        _replica_set(ns, rs_name, where, template, count, {"pod-template-hash": pth}), rs)
    if kind == "ReplicaSet":
        template = _template(obj, where)
        count = _count(spec.get("replicas"), 1)
        return Workload(kind, ns, name, where, count, _replica_set(ns, name, where, template, count, {}),
                        _controller(kind, ns, name, spec["selector"]))
    if kind == "StatefulSet":
        template = _template(obj, where)
        count = _count(spec.get("replicas"), 1)
        return Workload(kind, ns, name, where, count, lambda nodes: _stateful_pods(ns, name, spec, template, where, count),
                        _controller(kind, ns, name, spec["selector"]))
    if kind == "Job":
        template = _template(obj, where)
        return Workload(kind, ns, name, where, _job_count(spec),
                        lambda nodes: _job_pods(ns, name, spec, template, where))
    if kind == "CronJob":
        job = (spec.get("jobTemplate") or {})
        job_spec = job.get("spec") or {}
        template = _template(obj, where, "spec.jobTemplate.spec.template")
        # Upstream names a job after its scheduled time in minutes; kplan uses a stable number.
        job_name = f"{name}-{int(hashlib.sha256(f'{ns}/{name}'.encode()).hexdigest()[:7], 16) % 10**8:08d}"
        return Workload(kind, ns, name, where, _job_count(job_spec),
                        lambda nodes: _job_pods(ns, job_name, job_spec, template, where))
    if kind == "DaemonSet":
        template = _template(obj, where)
        return Workload(kind, ns, name, where, None, lambda nodes: _daemon_pods(ns, name, template, where, nodes))
    raise InputError(f"kind {kind!r} is not a Pod or a workload ({', '.join(WORKLOAD_KINDS)})", where)


def _job_count(spec: Mapping) -> int:
    """The pods a Job runs at once: parallelism (default 1), at most its completions."""
    parallelism = _count(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    return parallelism if completions is None else min(parallelism, completions)


def _stateful_pods(ns: str, name: str, spec: Mapping, template: Mapping, where: str, count: int) -> list[Pod]:
    uid = _uid("StatefulSet", ns, name)
    owner = _owner("StatefulSet", "apps/v1", name, uid)
    revision = f"{name}-{template_hash(template)}"
    base = {**((template.get("metadata") or {}).get("labels") or {}), "controller-revision-hash": revision}
    claims = claim_templates(spec, where)
    pods = []
    for k in range(count):
        pod_spec = with_claim_volumes({**template["spec"], "hostname": f"{name}-{k}"}, claims, f"{name}-{k}")
        if spec.get("serviceName"):
            pod_spec["subdomain"] = spec["serviceName"]
        labels = {**base, "statefulset.kubernetes.io/pod-name": f"{name}-{k}", "apps.kubernetes.io/pod-index": str(k)}
        pods.append(_pod(template, pod_spec, f"{name}-{k}", ns, labels, owner, where, claims))
    return pods


def claim_templates(spec: Mapping, where: str) -> dict[str, tuple[Mapping, dict[str, str]]]:
    """A StatefulSet's volumeClaimTemplates, each a valid claim, by name (its pods' volume name), with
    the labels its claims get: the template's and the set's selector matchLabels (getPersistentVolumeClaims)."""
    from kplan.api.storage import claim_spec
    from kplan.api.validation import Invalid, items, mapping, required, string
    selector_labels = dict(((spec.get("selector") or {}).get("matchLabels")) or {})
    out: dict[str, tuple[Mapping, dict[str, str]]] = {}
    try:
        for path, tpl in items(spec.get("volumeClaimTemplates"), "spec.volumeClaimTemplates"):
            name = string(mapping(tpl.get("metadata"), f"{path}.metadata").get("name"), f"{path}.metadata.name")
            if not name:
                raise required(f"{path}.metadata.name")
            claim_spec(mapping(tpl.get("spec"), f"{path}.spec"), f"{path}.spec")
            out[name] = (tpl, selector_labels)
    except Invalid as err:
        raise InputError(f"StatefulSet: {err}", where) from None
    return out


def with_claim_volumes(pod_spec: dict, claims: Mapping[str, Any], pod_name: str) -> dict:
    """updateStorage: a volume per claim template, named after it, using the pod's claim
    <template>-<pod>; the template's other volumes follow."""
    if not claims:
        return pod_spec
    volumes = [{"name": t, "persistentVolumeClaim": {"claimName": f"{t}-{pod_name}"}} for t in claims]
    volumes += [v for v in pod_spec.get("volumes") or () if not (isinstance(v, Mapping) and v.get("name") in claims)]
    return {**pod_spec, "volumes": volumes}


@dataclass
class Manifests:
    """What manifests hold for a simulation: the workloads in order, and the Services and storage
    objects (claims, volumes, classes) the cluster gets."""

    workloads: list[Workload] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)
    storage: list[Any] = field(default_factory=list)
    devices: list[Any] = field(default_factory=list)  # DeviceClasses, ResourceClaims and their templates
    hpas: list[Any] = field(default_factory=list)  # HorizontalPodAutoscalers

    @property
    def controllers(self) -> list[Controller]:
        """The ReplicaSets and StatefulSets the workloads' pods are owned by."""
        return [w.controller for w in self.workloads if w.controller is not None]

    def applied_to(self, snapshot):
        """The snapshot as applying the manifests would leave it: with their Services, the workloads'
        ReplicaSets and StatefulSets (what the default spread selector reads), their storage objects and
        their DRA objects."""
        return snapshot.with_objects(self.services, self.controllers, self.storage, self.devices)

    def pods(self, nodes: Sequence[Node] | None = None) -> list[Pod]:
        """Every workload's pods, in order."""
        return [pod for w in self.workloads for pod in w.pods(nodes)]
