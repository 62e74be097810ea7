"""Builders shaped like upstream's st.MakePod()/st.MakeNode() for the pod-to-pod plugin tests."""
from __future__ import annotations

from builders import node, pod

NO_SCHEDULE_UNSCHEDULABLE = [{"key": "node.kubernetes.io/unschedulable", "value": "", "effect": "NoSchedule"}]
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}  # st.MakeLabelSelector().Exists("foo")
BAR = {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}


def N(name, taints=None, **labels):
    """A node with exactly these labels (st.MakeNode().Name(name).Label(...))."""
    n = node(name, taints=taints)
    n["metadata"]["labels"] = dict(labels)
    return n


def spread(max_skew, key, when, selector, min_domains=None, affinity_policy=None, taints_policy=None,
           match_label_keys=None):
    """st.SpreadConstraint(maxSkew, topologyKey, whenUnsatisfiable, selector, minDomains, policies, keys)."""
    c = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not None:
        c["labelSelector"] = selector
    if min_domains is not None:
        c["minDomains"] = min_domains
    if affinity_policy:
        c["nodeAffinityPolicy"] = affinity_policy
    if taints_policy:
        c["nodeTaintsPolicy"] = taints_policy
    if match_label_keys:
        c["matchLabelKeys"] = list(match_label_keys)
    return c


def node_affinity(key, op, values):
    """st.NodeAffinityIn/NotIn: one required node selector term with one expression."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": key, "operator": op, "values": list(values)}]}]}}}


def P(name="p", node_name="", ns="default", labels=None, spread_constraints=(), node_selector=None,
      affinity=None, terminating=False, tolerations=None, owner_kind="", **label_kw):
    """A pod (st.MakePod()): labels from `labels` and keyword labels."""
    spec = {}
    if spread_constraints:
        spec["topologySpreadConstraints"] = list(spread_constraints)
    if node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    if affinity:
        spec["affinity"] = affinity
    if tolerations:
        spec["tolerations"] = tolerations
    p = pod(name, ns, node_name=node_name, labels={**(labels or {}), **label_kw}, spec=spec, owner_kind=owner_kind)
    if terminating:
        p["metadata"]["deletionTimestamp"] = "2026-11-01T12:00:00Z"
    return p


def on(node_name, *names, ns="default", **labels):
    """Existing pods on one node, all with the same labels."""
    return [P(n, node_name, ns=ns, **labels) for n in names]


def term(key, op, values, topology_key, namespaces=None, namespace_selector="unset", **extra):
    """A PodAffinityTerm whose selector has one expression (st.PodAffinityIn/NotIn/Exists)."""
    expr = {"key": key, "operator": op}
    if values is not None:
        expr["values"] = list(values)
    t = {"labelSelector": {"matchExpressions": [expr]}, "topologyKey": topology_key}
    if namespaces is not None:
        t["namespaces"] = list(namespaces)
    if namespace_selector != "unset":
        t["namespaceSelector"] = namespace_selector
    t.update(extra)
    return t


def affinity(required=(), anti=(), preferred=(), preferred_anti=()):
    """spec.affinity with pod affinity / anti-affinity terms; preferred ones are (weight, term) pairs."""
    out = {}
    for field, req, pref in (("podAffinity", required, preferred), ("podAntiAffinity", anti, preferred_anti)):
        section = {}
        if req:
            section["requiredDuringSchedulingIgnoredDuringExecution"] = list(req)
        if pref:
            section["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": w, "podAffinityTerm": t} for w, t in pref]
        if section:
            out[field] = section
    return out


# -- what helper.DefaultSelector reads: Services and controllers, in a snapshot ---------------------

CONTROLLER_API = {"ReplicaSet": "apps/v1", "StatefulSet": "apps/v1", "ReplicationController": "v1"}


def owned(pod_raw, kind, name, api=None, controller=True, uid=None):
    """The pod with one owner reference (st.MakePod().OwnerReference(name, gvk): a controller)."""
    ref = {"apiVersion": api or CONTROLLER_API.get(kind, "apps/v1"), "kind": kind, "name": name,
           "uid": uid or f"uid-{kind}-{name}"}
    if controller is not None:
        ref["controller"] = controller
    pod_raw["metadata"]["ownerReferences"] = [ref]
    return pod_raw


def service(selector, name="svc", ns="default"):
    """A Service whose spec.selector is the label map `selector` (None: no selector)."""
    spec = {"ports": [{"port": 80}]}
    if selector is not None:
        spec["selector"] = dict(selector)
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def controller(kind, name, selector, ns="default", api=None):
    """A ReplicaSet or StatefulSet (selector: a LabelSelector) or ReplicationController (a label map)."""
    spec = {"replicas": 1}
    if selector is not None:
        spec["selector"] = selector
    return {"apiVersion": api or CONTROLLER_API[kind], "kind": kind,
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{kind}-{name}"}, "spec": spec}


def replica_set(name, selector, ns="default"):
    return controller("ReplicaSet", name, selector, ns)


def snapshot_of(*objs):
    """A Snapshot holding the objects (Services, controllers, ...) as a dump would give them."""
    from kplan.sources.snapshot import Snapshot
    snap = Snapshot()
    for k, obj in enumerate(objs):
        snap.add(obj, "test", k + 1)
    return snap
