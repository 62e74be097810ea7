"""Volumes through the command line: each reason the four volume plugins give, claims bound during a
run, StatefulSet claims, attach limits filled by the run's own pods, --add-node :auto refusing a
template in the wrong zone, and bad storage input.

The cluster: three nodes, one per zone (n-a in zone-a, n-b in zone-b, n-c in zone-c), 4 CPU each;
CSINodes give csi.example.com a limit of 2 volumes on n-a and none elsewhere. Expectations follow
upstream's rules (volumebinding, volumezone, volumerestrictions, nodevolumelimits), worked out
by hand in each test. Releases from 1.34 run DynamicResources' PostFilter first: a PreFilter
rejection ends with ". not found", a Filter one with "no new claims to deallocate, preemption: …".
"""
from __future__ import annotations

import json
from functools import partial

import pytest
import yaml

from builders import container, node, pod
from run_kplan import run_kplan

kplan = partial(run_kplan, columns=200)
DRIVER = "csi.example.com"
ZONES = {"n-a": "zone-a", "n-b": "zone-b", "n-c": "zone-c"}
NOT_HELPFUL = "no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."


def zoned(name: str) -> dict:
    return node(name, labels={"topology.kubernetes.io/zone": ZONES[name]})


def storage_class(name: str, mode: str = "WaitForFirstConsumer", provisioner: str = DRIVER, **extra) -> dict:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
            "provisioner": provisioner, "volumeBindingMode": mode, **extra}


def claim(name: str, cls: str | None = "wffc", *, size: str = "10Gi", volume: str = "", modes=("ReadWriteOnce",),
          bound: bool = True, **meta) -> dict:
    spec = {"accessModes": list(modes), "resources": {"requests": {"storage": size}}}
    if cls is not None:
        spec["storageClassName"] = cls
    out = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", **meta}, "spec": spec,
           "status": {"phase": "Bound" if volume else "Pending"}}
    if volume:
        spec["volumeName"] = volume
        if bound:
            out["metadata"].setdefault("annotations", {})["pv.kubernetes.io/bind-completed"] = "yes"
    return out


def volume(name: str, zone: str | None, cls: str = "static", *, size: str = "10Gi", claim_name: str = "",
           phase: str = "Available", handle: str = "", modes=("ReadWriteOnce",), affinity: bool = True) -> dict:
    spec: dict = {"capacity": {"storage": size}, "accessModes": list(modes), "storageClassName": cls,
                  "csi": {"driver": DRIVER, "volumeHandle": handle or f"vol-{name}"}}
    labels = {}
    if zone:
        labels["topology.kubernetes.io/zone"] = zone
        if affinity:
            spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}]}}
    if claim_name:
        spec["claimRef"] = {"namespace": "default", "name": claim_name, "uid": f"uid-{claim_name}"}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name, "labels": labels},
            "spec": spec, "status": {"phase": phase}}


def csi_node(name: str, limit: int | None) -> dict:
    driver = {"name": DRIVER, "nodeID": name}
    if limit is not None:
        driver["allocatable"] = {"count": limit}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name},
            "spec": {"drivers": [driver]}}


def with_claims(name: str, *claims: str, cpu: str = "1", node_name: str = "", **extra) -> dict:
    p = pod(name, node_name=node_name, containers=[container(requests={"cpu": cpu})])
    p["spec"]["volumes"] = [{"name": f"v{k}", "persistentVolumeClaim": {"claimName": c}}
                            for k, c in enumerate(claims)]
    p["spec"].update(extra)
    return p


BASE = [zoned("n-a"), zoned("n-b"), zoned("n-c"), csi_node("n-a", 2), csi_node("n-b", None),
        storage_class("wffc"), storage_class("immediate", "Immediate"),
        storage_class("static", provisioner="kubernetes.io/no-provisioner"),
        storage_class("zonal", allowedTopologies=[{"matchLabelExpressions": [
            {"key": "topology.kubernetes.io/zone", "values": ["zone-c"]}]}])]


def write(tmp_path, name: str, objects) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(objects) if isinstance(objects, list) else yaml.safe_dump(objects))
    return str(path)


def place(tmp_path, cluster_objects, *pods, version: str = "1.34", args=()) -> tuple[int, list[dict]]:
    cluster = write(tmp_path, "cluster.yaml", {"apiVersion": "v1", "kind": "List", "items": cluster_objects})
    files = [write(tmp_path, f"pod-{k}.yaml", p) for k, p in enumerate(pods)]
    code, out, err = kplan("place", *files, "-f", cluster, "--kube-version", version, "-o", "json", "--top", "0",
                           *args)
    assert code in (0, 1), err
    return code, json.loads(out)["placements"]


def rejected(placement: dict) -> dict[str, tuple[str, list[str]]]:
    return {n["name"]: (n["plugin"], n["reasons"]) for n in placement["nodes"] if not n["feasible"]}


# -- each reason ---------------------------------------------------------------------------------------

def test_unbound_immediate_claim_rejects_the_pod_in_prefilter(tmp_path):
    # GetPodVolumeClaims: an unbound claim of an Immediate class should have been bound by the PV
    # controller: PreFilter UnschedulableAndUnresolvable. From 1.34 DynamicResources' PostFilter,
    # whose PreFilter never ran, fails with "not found"; in 1.33 DefaultPreemption finds no node
    # worth preempting on (every node is UnschedulableAndUnresolvable).
    objects = [*BASE, claim("data", "immediate")]
    _, (p,) = place(tmp_path, objects, with_claims("db", "data"))
    assert p["outcome"] == "Unschedulable"
    assert p["message"] == "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found"
    assert p["postFilter"]["plugin"] == "DynamicResources" and p["postFilter"]["code"] == "Error"
    _, (p,) = place(tmp_path, objects, with_claims("db", "data"), version="1.33")
    assert p["message"] == ("0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: "
                            "0/3 nodes are available: 3 Preemption is not helpful for scheduling.")


def test_claim_pre_bound_to_a_volume_but_not_bound_yet_is_immediate(tmp_path):
    # A volume name without the bind-completed annotation: not fully bound, so "immediate".
    objects = [*BASE, claim("data", "wffc", volume="pv-a", bound=False), volume("pv-a", "zone-a", "wffc")]
    _, (p,) = place(tmp_path, objects, with_claims("db", "data"))
    assert p["message"] == "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. not found"


def test_bound_volume_in_another_zone(tmp_path):
    # pv-a admits zone-a nodes only: VolumeBinding rejects n-b and n-c (UnschedulableAndUnresolvable),
    # and VolumeZone would too (the PV carries the zone label), but Filter stops at VolumeBinding.
    objects = [*BASE, claim("data", "wffc", volume="pv-a"), volume("pv-a", "zone-a", "wffc", claim_name="data")]
    _, (p,) = place(tmp_path, objects, with_claims("db", "data"))
    assert p["outcome"] == "Scheduled" and p["node"] == "n-a"
    reason = "node(s) didn't match PersistentVolume's node affinity"
    assert rejected(p) == {"n-b": ("VolumeBinding", [reason]), "n-c": ("VolumeBinding", [reason])}
    assert p["volumes"] == [{"claim": "data", "status": "Bound", "storageClass": "wffc",
                             "bindingMode": "WaitForFirstConsumer", "volume": "pv-a", "zone": "zone-a",
                             "nodeAffinity": "topology.kubernetes.io/zone in (zone-a)"}]


def test_volume_zone_labels_without_node_affinity(tmp_path):
    # A volume with a zone label but no node affinity: VolumeBinding admits every node, VolumeZone
    # only those whose zone label is among the volume's. n-a, in zone-a, has 500m free; a pod of the
    # same priority there is no victim.
    filler = pod("filler", node_name="n-a", containers=[container(requests={"cpu": "3500m"})])
    objects = [*BASE, filler, claim("data", "wffc", volume="pv-a"),
               volume("pv-a", "zone-a", "wffc", claim_name="data", affinity=False)]
    _, (p,) = place(tmp_path, objects, with_claims("db", "data", cpu="1"))
    assert p["message"] == ("0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had no available volume zone. "
                            "no new claims to deallocate, preemption: 0/3 nodes are available: 1 No preemption "
                            "victims found for incoming pod, 2 Preemption is not helpful for scheduling.")
    assert rejected(p)["n-b"] == ("VolumeZone", ["node(s) had no available volume zone"])


def test_missing_claim_and_missing_volume(tmp_path):
    # VolumeRestrictions' PreFilter reads every claim first: a missing one is the lister's NotFound.
    # A claim bound to a missing volume passes VolumeBinding's PreFilter; VolumeZone's reads the volume.
    objects = [*BASE, claim("orphan", "wffc", volume="pv-gone")]
    _, (missing, orphan) = place(tmp_path, objects, with_claims("a", "nope"), with_claims("b", "orphan"))
    assert missing["message"] == '0/3 nodes are available: persistentvolumeclaim "nope" not found. not found'
    assert {n["plugin"] for n in missing["nodes"]} == {"VolumeRestrictions"}
    assert orphan["message"] == '0/3 nodes are available: persistentvolume "pv-gone" not found. not found'
    assert {n["plugin"] for n in orphan["nodes"]} == {"VolumeZone"}


def test_terminating_and_lost_claims(tmp_path):
    objects = [*BASE, claim("going", "wffc", deletionTimestamp="2026-11-20T00:00:00Z"),
               {**claim("lost", "wffc", volume="pv-x"), "status": {"phase": "Lost"}}]
    _, (going, lost) = place(tmp_path, objects, with_claims("a", "going"), with_claims("b", "lost"))
    assert going["message"] == '0/3 nodes are available: persistentvolumeclaim "going" is being deleted. not found'
    assert lost["message"] == ('0/3 nodes are available: persistentvolumeclaim "lost" bound to non-existent '
                               'persistentvolume "pv-x". not found')


def test_delayed_claim_without_volume_or_provisioner(tmp_path):
    # Class static provisions nothing; the only Available volume of the class is in zone-b and too
    # small for one claim: findMatchingVolumes finds none on n-a and n-c, and n-b fits only the 1Gi claim.
    objects = [*BASE, claim("small", "static", size="1Gi"), claim("big", "static", size="20Gi"),
               volume("pv-b", "zone-b", "static", size="5Gi")]
    _, (p, q) = place(tmp_path, objects, with_claims("a", "small"), with_claims("b", "big"))
    assert p["outcome"] == "Scheduled" and p["node"] == "n-b"
    reason = "node(s) didn't find available persistent volumes to bind"
    assert rejected(p) == {"n-a": ("VolumeBinding", [reason]), "n-c": ("VolumeBinding", [reason])}
    # pv-b is pre-bound to "small" now (the binder's assumption): nothing is left for "big".
    assert q["message"] == f"0/3 nodes are available: 3 {reason}. {NOT_HELPFUL}"
    assert p["volumes"][0]["volume"] == "pv-b" and p["volumes"][0]["status"] == "Pending"


def test_allowed_topologies_and_storage_capacity(tmp_path):
    # zonal provisions in zone-c only. The capacity class's driver tracks capacity: a
    # CSIStorageCapacity of 50Gi reachable from zone-a, 5Gi from zone-b, none for zone-c.
    capacity = storage_class("fast", provisioner="fast.example.com")
    driver = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "fast.example.com"},
              "spec": {"storageCapacity": True}}

    def pool(name, zone, size):
        return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                "metadata": {"name": name, "namespace": "kube-system"}, "storageClassName": "fast",
                "capacity": size, "nodeTopology": {"matchLabels": {"topology.kubernetes.io/zone": zone}}}

    objects = [*BASE, capacity, driver, pool("cap-a", "zone-a", "50Gi"), pool("cap-b", "zone-b", "5Gi"),
               claim("z", "zonal"), claim("f", "fast", size="10Gi")]
    _, (z, f) = place(tmp_path, objects, with_claims("a", "z"), with_claims("b", "f"))
    assert z["node"] == "n-c"
    assert set(rejected(z)) == {"n-a", "n-b"}
    assert f["node"] == "n-a"
    assert rejected(f) == {"n-b": ("VolumeBinding", ["node(s) did not have enough free storage"]),
                           "n-c": ("VolumeBinding", ["node(s) did not have enough free storage"])}


def test_read_write_once_pod_claim_in_use(tmp_path):
    # VolumeRestrictions: a ReadWriteOncePod claim a bound pod uses rejects every node (Unschedulable),
    # before VolumeBinding looks at the volume. Preemption: n-a and n-c have no pod to evict; on n-b,
    # evicting the lower-priority holder frees the claim (RemovePod) and n-b reaches the volume.
    objects = [*BASE, claim("solo", "wffc", volume="pv-b", modes=("ReadWriteOncePod",)),
               volume("pv-b", "zone-b", "wffc", claim_name="solo", modes=("ReadWriteOncePod",)),
               with_claims("holder", "solo", node_name="n-b")]
    _, (p,) = place(tmp_path, objects, with_claims("next", "solo", priorityClassName="", priority=10))
    assert p["outcome"] == "NeedsPreemption" and p["node"] == "n-b"
    assert p["preemption"]["victims"] == ["default/holder"]
    reason = ("node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use "
              "by another pod")
    assert p["message"] == f"0/3 nodes are available: 3 {reason}."


def test_attach_limit_reached_by_the_runs_own_pods(tmp_path):
    # n-a allows 2 csi.example.com volumes. Three pods pinned to n-a, each with its own unbound wffc
    # claim (counted as a new volume of the class's provisioner): the third exceeds the limit.
    objects = [*BASE, claim("d0", "wffc"), claim("d1", "wffc"), claim("d2", "wffc")]
    pinned = {"nodeSelector": {"topology.kubernetes.io/zone": "zone-a"}}
    _, placements = place(tmp_path, objects, *(with_claims(f"p{k}", f"d{k}", cpu="100m", **pinned) for k in range(3)))
    assert [p["node"] for p in placements] == ["n-a", "n-a", None]
    assert placements[2]["message"] == (
        "0/3 nodes are available: 1 node(s) exceed max volume count, 2 node(s) didn't match Pod's node "
        "affinity/selector. no new claims to deallocate, preemption: 0/3 nodes are available: 1 No preemption "
        "victims found for incoming pod, 2 Preemption is not helpful for scheduling.")
    # Two pods sharing one claim count it once: the second finds its volume attached already.
    _, shared = place(tmp_path, [*BASE, claim("d0", "wffc"), claim("d1", "wffc")],
                      with_claims("p0", "d0", "d1", cpu="100m", **pinned),
                      with_claims("p1", "d0", cpu="100m", **pinned))
    assert [p["node"] for p in shared] == ["n-a", "n-a"]


def test_wait_for_first_consumer_claim_bound_by_an_earlier_pod_of_the_run(tmp_path):
    # Two pods share an unbound claim of class static (no provisioner), with Available volumes in
    # zone-a and zone-b. The first pod goes to n-a (its 1 CPU fits everywhere; ties go to the first
    # name) and pre-binds pv-a, the volume n-a reaches. The second pod's claim then matches pv-a alone
    # (a volume pre-bound to it decides where it is, FindMatchingVolume): zone-a only.
    objects = [*BASE, claim("shared", "static"), volume("pv-a", "zone-a", "static", size="10Gi"),
               volume("pv-b", "zone-b", "static", size="10Gi")]
    _, (first, second) = place(tmp_path, objects, with_claims("a", "shared"), with_claims("b", "shared"))
    assert first["node"] == "n-a" and first["volumes"][0]["volume"] == "pv-a"
    assert second["node"] == "n-a"
    reason = "node(s) didn't find available persistent volumes to bind"
    assert rejected(second) == {"n-b": ("VolumeBinding", [reason]), "n-c": ("VolumeBinding", [reason])}
    # With a provisioner, a node pv-a does not admit provisions instead: the second pod goes to n-b,
    # the least allocated, as upstream's binder would let it.
    objects = [*BASE, claim("shared", "wffc"), volume("pv-a", "zone-a", "wffc", size="10Gi")]
    _, (first, second) = place(tmp_path, objects, with_claims("a", "shared"), with_claims("b", "shared"))
    assert (first["node"], second["node"]) == ("n-a", "n-b") and not rejected(second)
    # Provisioned instead (no volume left): the claim is tied to the first pod's node.
    objects = [*BASE, claim("shared", "wffc")]
    _, (first, second) = place(tmp_path, objects, with_claims("a", "shared"), with_claims("b", "shared"))
    assert first["node"] == second["node"] == "n-a"
    assert second["volumes"][0]["selectedNode"] == "n-a"
    assert set(rejected(second)) == {"n-b", "n-c"}


def test_ephemeral_volume_claim_is_created_for_the_pod(tmp_path):
    # The ephemeral volume controller creates <pod>-<volume>, owned by the pod, with the template's
    # spec: class zonal provisions in zone-c only.
    p = pod("scratch", containers=[container(requests={"cpu": "1"})])
    p["spec"]["volumes"] = [{"name": "tmp", "ephemeral": {"volumeClaimTemplate": {"spec": {
        "accessModes": ["ReadWriteOnce"], "storageClassName": "zonal",
        "resources": {"requests": {"storage": "1Gi"}}}}}}]
    _, (placed,) = place(tmp_path, BASE, p)
    assert placed["node"] == "n-c"
    assert placed["volumes"] == [{"claim": "scratch-tmp", "status": "Pending", "storageClass": "zonal",
                                  "bindingMode": "WaitForFirstConsumer", "selectedNode": "n-c"}]


# -- workloads ------------------------------------------------------------------------------------------

def statefulset(replicas: int, cls: str | None = None) -> dict:
    template_spec: dict = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if cls:
        template_spec["storageClassName"] = cls
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "default"},
            "spec": {"serviceName": "db", "replicas": replicas, "selector": {"matchLabels": {"app": "db"}},
                     "template": {"metadata": {"labels": {"app": "db"}},
                                  "spec": {"containers": [container(requests={"cpu": "1"})]}},
                     "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": template_spec}]}}


def test_statefulset_replica_pinned_by_an_existing_claim(tmp_path):
    # data-db-2 exists, bound to a volume in zone-a, where n-a has 500m free: replica 2 is stuck
    # while replicas 0 and 1 get new claims of the default class and go anywhere.
    default = storage_class("std", annotations=None)
    default["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    filler = pod("filler", node_name="n-a", containers=[container(requests={"cpu": "3500m"})])
    objects = [*BASE, default, filler, claim("data-db-2", "std", volume="pv-2", size="1Gi"),
               volume("pv-2", "zone-a", "std", size="1Gi", claim_name="data-db-2", phase="Bound")]
    cluster = write(tmp_path, "cluster.yaml", {"apiVersion": "v1", "kind": "List", "items": objects})
    manifest = write(tmp_path, "sts.yaml", statefulset(3))
    code, out, err = kplan("check", manifest, "-f", cluster, "-o", "json")
    assert code == 1, err
    (entry,) = json.loads(out)["workloads"]
    assert entry["placed"] == 2 and entry["firstFailure"]["pod"] == "default/db-2"
    failure = entry["firstFailure"]
    assert failure["volumes"] == [{"claim": "data-db-2", "status": "Bound", "storageClass": "std",
                                   "bindingMode": "WaitForFirstConsumer", "volume": "pv-2", "zone": "zone-a",
                                   "nodeAffinity": "topology.kubernetes.io/zone in (zone-a)"}]
    assert failure["hints"][0] == ("claim data-db-2 is bound to volume pv-2 in zone-a: every node it can use is "
                                   "rejected (n-a: 500m cpu short)")
    code, out, _ = kplan("place", manifest, "-f", cluster, "-o", "json")
    first = json.loads(out)["placements"][0]
    assert first["volumes"][0]["claim"] == "data-db-0" and first["volumes"][0]["storageClass"] == "std"


def test_capacity_gives_each_statefulset_replica_its_own_claim(tmp_path):
    # n-a allows 2 volumes, n-b and n-c none: with every replica's new claim counted on n-a and one
    # CPU each, capacity counts 4 + 4 + 2 CPU-bound replicas... on n-b and n-c, and 2 on n-a by volumes.
    cluster = write(tmp_path, "cluster.yaml", {"apiVersion": "v1", "kind": "List", "items": BASE})
    manifest = write(tmp_path, "sts.yaml", statefulset(1, "wffc"))
    code, out, err = kplan("capacity", manifest, "-f", cluster, "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["perNode"] == {"n-a": 2, "n-b": 4, "n-c": 4}


def test_auto_refuses_a_template_in_the_wrong_zone(tmp_path):
    objects = [*BASE, pod("filler", node_name="n-a", containers=[container(requests={"cpu": "4"})]),
               claim("data-db-0", "wffc", volume="pv-0"),
               volume("pv-0", "zone-a", "wffc", claim_name="data-db-0", phase="Bound")]
    cluster = write(tmp_path, "cluster.yaml", {"apiVersion": "v1", "kind": "List", "items": objects})
    manifest = write(tmp_path, "sts.yaml", statefulset(1, "wffc"))
    wrong = write(tmp_path, "node-b.yaml", node("extra-b", labels={"topology.kubernetes.io/zone": "zone-b"}))
    code, out, err = kplan("check", manifest, "-f", cluster, "--add-node", f"{wrong}:auto", "-o", "json")
    assert code == 1, err
    report = json.loads(out)
    assert report["nodesNeeded"] is None and report["nodeCountsTried"] == [0]
    assert report["nodesNeededSummary"].startswith("no copy of extra-b can hold pod default/db-0: extra-b: claim "
                                                   "data-db-0 is bound to volume pv-0")
    right = write(tmp_path, "node-a.yaml", node("extra-a", labels={"topology.kubernetes.io/zone": "zone-a"}))
    code, out, err = kplan("check", manifest, "-f", cluster, "--add-node", f"{right}:auto", "-o", "json")
    assert code == 0, err
    assert json.loads(out)["nodesNeeded"] == {"extra-a": 1}


# -- nodes -----------------------------------------------------------------------------------------------

def test_nodes_show_attached_csi_volumes_against_each_limit(tmp_path):
    attachment = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": "att-1"},
                  "spec": {"attacher": DRIVER, "nodeName": "n-a", "source": {"persistentVolumeName": "pv-1"}}}
    objects = [*BASE, attachment, volume("pv-1", "zone-a", "wffc", phase="Released"),
               claim("d0", "wffc", volume="pv-0"), volume("pv-0", "zone-a", "wffc", claim_name="d0", phase="Bound"),
               with_claims("user", "d0", node_name="n-a")]
    cluster = write(tmp_path, "cluster.yaml", {"apiVersion": "v1", "kind": "List", "items": objects})
    code, out, _ = kplan("nodes", "-f", cluster, "-o", "json")
    nodes = {n["name"]: n.get("csiVolumes") for n in json.loads(out)["nodes"]}
    # n-a: its pod's volume and an attachment of another; n-b publishes no limit and has no volume.
    assert nodes == {"n-a": {DRIVER: {"attached": 2, "limit": 2}}, "n-b": None, "n-c": None}
    code, out, _ = kplan("nodes", "-f", cluster, "-o", "wide")
    assert code == 0 and f"{DRIVER} 2/2" in out


# -- bad input ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("obj, where, message", [
    pytest.param({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"namespace": "default"},
                  "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
                 "manifest", 'PersistentVolumeClaim "": metadata.name: Required value: name or generateName is required',
                 id="claim without a name"),
    pytest.param(claim("x", "wffc", modes=("ReadWriteSometimes",)), "manifest",
                 'PersistentVolumeClaim "x": spec.accessModes: Unsupported value: "ReadWriteSometimes": supported '
                 'values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"',
                 id="unknown access mode"),
    pytest.param({**volume("pv-x", None), "spec": {**volume("pv-x", None)["spec"], "nodeAffinity": {"required": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In"}]}]}}}}, "manifest",
                 'PersistentVolume "pv-x": spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values: '
                 "Required value: must be specified when `operator` is 'In' or 'NotIn'",
                 id="volume with an invalid node affinity"),
    pytest.param({**claim("y", "wffc"), "spec": {"accessModes": ["ReadWriteOnce"]}}, "manifest",
                 'PersistentVolumeClaim "y": spec.resources[storage]: Required value', id="claim without a request"),
    pytest.param({**claim("z", "wffc"), "spec": {**claim("z", "wffc")["spec"], "resources": {"requests": {
        "storage": "lots"}}}}, "snapshot", 'PersistentVolumeClaim "z": invalid quantity', id="snapshot quantity"),
    pytest.param({**claim("x", "wffc"), "spec": {**claim("x", "wffc")["spec"], "selector": {"matchExpressions": [
        {"key": "tier", "operator": "Sometimes", "values": ["gold"]}]}}}, "snapshot",
                 "cluster.yaml: PersistentVolumeClaim x spec.selector: 'Sometimes' is not a valid label selector "
                 "operator", id="snapshot selector"),
])
def test_bad_storage_input_is_one_line_and_exit_2(tmp_path, obj, where, message):
    cluster_objects = list(BASE) + ([obj] if where == "snapshot" else [])
    cluster = write(tmp_path, "cluster.yaml", {"apiVersion": "v1", "kind": "List", "items": cluster_objects})
    files = [write(tmp_path, "claim.yaml", obj)] if where == "manifest" else []
    code, out, err = kplan("place", *files, write(tmp_path, "pod.yaml", with_claims("a", "x")), "-f", cluster)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and message in err and "Traceback" not in err


def test_a_snapshot_claim_without_a_name_is_counted_and_skipped(tmp_path):
    # A snapshot's objects are not validated (their API server admitted them), but an object nothing
    # can name is not read: it is counted in a warning naming its kind and file.
    nameless = {**claim("x", "wffc"), "metadata": {"namespace": "default"}}
    cluster = write(tmp_path, "cluster.yaml", {"apiVersion": "v1", "kind": "List", "items": [*BASE, nameless]})
    code, out, err = kplan("place", write(tmp_path, "pod.yaml", with_claims("a", "x")), "-f", cluster, "-o", "json")
    assert code == 1
    assert "1 object(s) without metadata.name, left out: PersistentVolumeClaim in" in err
    assert json.loads(out)["placements"][0]["message"].startswith('0/3 nodes are available: persistentvolumeclaim "x"')


def test_pod_volume_without_a_claim_name_is_exit_2(tmp_path):
    cluster = write(tmp_path, "cluster.yaml", {"apiVersion": "v1", "kind": "List", "items": BASE})
    bad = with_claims("a", "")
    code, _, err = kplan("place", write(tmp_path, "pod.yaml", bad), "-f", cluster)
    assert code == 2 and 'Pod "a": spec.volumes[0].persistentVolumeClaim.claimName: Required value' in err


def test_statefulset_claim_template_without_a_name_is_exit_2(tmp_path):
    sts = statefulset(1, "wffc")
    del sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"]
    cluster = write(tmp_path, "cluster.yaml", {"apiVersion": "v1", "kind": "List", "items": BASE})
    code, _, err = kplan("check", write(tmp_path, "sts.yaml", sts), "-f", cluster)
    assert code == 2 and "spec.volumeClaimTemplates[0].metadata.name: Required value" in err
