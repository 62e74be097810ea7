"""The FailedScheduling message as the profile builds it, release by release.

The message is the framework's FitError: the PreFilter message or the filter histogram (nodes
outside a PreFilterResult counted with the absent nodes' status), then the PostFilter status,
whose reasons RunPostFilterPlugins joins in profile order. From v1.34 DynamicResources runs
before DefaultPreemption (applyFeatureGates, gate GA and on); in v1.33 its gate is off and the
plugin is not in the default profile. Expectations follow kube-scheduler's framework
(pkg/scheduler/framework/types.go FitError.Error, runtime/framework.go RunPreFilterPlugins and
RunPostFilterPlugins, schedule_one.go findNodesThatFitPod) and the DynamicResources plugin
(dynamicresources.go PreFilter, PostFilter).
"""
import json

import pytest
import yaml

from test_place_cli import CLUSTER, kplan

TOO_BIG_FILTERS = ("0/6 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable, "
                   "4 Insufficient cpu, 4 Insufficient memory.")
NOT_HELPFUL = "preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling."


def place(tmp_path, pod, *args):
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(pod))
    code, out, err = kplan("place", str(path), "-f", CLUSTER, "-o", "json", "--top", "0", *args)
    assert code in (0, 1), err
    (entry,) = json.loads(out)["placements"]
    return entry


def pod(name="p", **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}


@pytest.mark.parametrize("version, post_filter, plugin", [
    # Before 1.34 a request above a node's whole allocatable is only Unschedulable, so preemption
    # tries those four nodes, where no pod has a lower priority than the pod's 0.
    ("1.33.5", "preemption: 0/6 nodes are available: 2 Preemption is not helpful for scheduling, "
               "4 No preemption victims found for incoming pod.", "DefaultPreemption"),
    ("1.34.1", "no new claims to deallocate, " + NOT_HELPFUL, "DynamicResources"),
    ("1.35", "no new claims to deallocate, " + NOT_HELPFUL, "DynamicResources"),
    ("1.36", "no new claims to deallocate, " + NOT_HELPFUL, "DynamicResources"),
])
def test_post_filter_reasons_are_joined_in_profile_order(version, post_filter, plugin):
    code, out, _ = kplan("place", "samples/pod-too-big.yaml", "-f", CLUSTER, "-o", "json",
                         "--kube-version", version)
    assert code == 1
    (p,) = json.loads(out)["placements"]
    # 1.33 and 1.34.1 name the taint (the generic reason came with 1.34.2 and 1.35).
    filters = TOO_BIG_FILTERS if version not in ("1.34.1", "1.33.5") else TOO_BIG_FILTERS.replace(
        "1 node(s) had untolerated taint(s)", "1 node(s) had untolerated taint {nvidia.com/gpu: present}")
    assert p["message"] == f"{filters} {post_filter}"
    # The status names the first plugin that answered Unschedulable.
    assert p["postFilter"] == {"plugin": plugin, "code": "Unschedulable", "message": post_filter,
                               "nominatedNode": None}


CONFLICT = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a1"]},
                     {"key": "metadata.name", "operator": "In", "values": ["node-b1"]}]}]}}}


@pytest.mark.parametrize("version", ["1.34.1", "1.36"])
def test_prefilter_rejection_leaves_dynamic_resources_without_state(tmp_path, version):
    # NodeAffinity's PreFilter rejects (UnschedulableAndUnresolvable), which ends the PreFilter loop
    # before DynamicResources wrote its cycle state: its PostFilter fails with the state's
    # "not found", an Error that ends the PostFilter run, so preemption never runs.
    p = place(tmp_path, pod(affinity=CONFLICT, priority=1000), "--kube-version", version)
    assert p["outcome"] == "Unschedulable"
    assert p["message"] == "0/6 nodes are available: pod affinity terms conflict. not found"
    assert p["postFilter"] == {"plugin": "DynamicResources", "code": "Error", "message": "not found",
                               "nominatedNode": None}
    assert p["candidates"] == []


def test_prefilter_rejection_before_1_34_goes_to_preemption(tmp_path):
    # Without DynamicResources in the profile DefaultPreemption runs: every node carries the
    # PreFilter's UnschedulableAndUnresolvable status, so none is worth preempting on.
    p = place(tmp_path, pod(affinity=CONFLICT, priority=1000), "--kube-version", "1.33")
    assert p["message"] == ("0/6 nodes are available: pod affinity terms conflict. "
                            "preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling.")
    assert p["postFilter"]["plugin"] == "DefaultPreemption"


UNRESOLVABLE = "preemption: 0/6 nodes are available: 6 Preemption is not helpful for scheduling."


@pytest.mark.parametrize("version, post_filter", [
    # 1.33: 64 CPUs above node-a1's allocatable is Unschedulable, so preemption tries node-a1.
    ("1.33", "preemption: 0/6 nodes are available: 1 No preemption victims found for incoming pod, "
             "5 Preemption is not helpful for scheduling."),
    ("1.34.1", "no new claims to deallocate, " + UNRESOLVABLE),
    ("1.36", "no new claims to deallocate, " + UNRESOLVABLE)])
def test_nodes_outside_the_prefilter_result_are_counted(tmp_path, version, post_filter):
    # A DaemonSet pod's matchFields term: NodeAffinity's PreFilterResult holds one node, the other
    # five are absent from NodeToStatus and FitError counts them with the absent nodes' status.
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a1"]}]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    big = pod(affinity=affinity, containers=[{"name": "c", "image": "busybox",
                                              "resources": {"requests": {"cpu": "64"}}}])
    p = place(tmp_path, big, "--kube-version", version)
    assert p["outcome"] == "Unschedulable"
    assert p["message"] == ("0/6 nodes are available: 1 Insufficient cpu, "
                            "5 node(s) didn't satisfy plugin(s) [NodeAffinity]. " + post_filter)
    outside = [n for n in p["nodes"] if n["name"] != "node-a1"]
    assert {n["plugin"] for n in outside} == {""}
    assert {tuple(n["reasons"]) for n in outside} == {("node(s) didn't satisfy plugin(s) [NodeAffinity]",)}


@pytest.mark.parametrize("version, post_filter", [
    ("1.33", UNRESOLVABLE), ("1.34.1", "no new claims to deallocate, " + UNRESOLVABLE)])
def test_a_prefilter_result_naming_only_absent_nodes_rejects_no_pod_in_prefilter(tmp_path, version, post_filter):
    # The pod of a DaemonSet whose node is gone: NodeAffinity's PreFilterResult names a node the
    # snapshot does not have. The set is not empty, so RunPreFilterPlugins goes on (DynamicResources
    # writes its state); findNodesThatFitPod finds no node of that name and gives all six the absent
    # nodes' status.
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-gone"]}]}
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    p = place(tmp_path, pod(affinity=affinity), "--kube-version", version)
    assert p["outcome"] == "Unschedulable"
    assert p["message"] == "0/6 nodes are available: 6 node(s) didn't satisfy plugin(s) [NodeAffinity]. " + post_filter


def test_gated_pod_lists_no_rejected_nodes(tmp_path):
    # PreEnqueue keeps a gated pod out of the queue: no filter ever ran on a node.
    p = place(tmp_path, pod(schedulingGates=[{"name": "example.com/wait"}]))
    assert p["outcome"] == "SchedulingGated"
    assert p["nodes"] == []
    assert p["message"] == "waiting for scheduling gates: [example.com/wait]"


def test_pod_whose_claim_does_not_exist_waits_in_pre_enqueue(tmp_path):
    # DynamicResources' PreEnqueue (from 1.34): the pod never reaches the filters.
    claims = [{"name": "gpu", "resourceClaimName": "gpu-claim"}]
    p = place(tmp_path, pod(resourceClaims=claims))
    assert (p["outcome"], p["nodes"], p["notSimulated"]) == ("SchedulingGated", [], [])
    assert p["message"] == 'could not find ResourceClaim "default/gpu-claim"'

