"""DynamicResources through the command line: claims allocated as kube-scheduler's structured allocator
allocates them (k8s.io/dynamic-resource-allocation/structured), each rule on a small cluster whose
answer follows from upstream's code by hand.

Unless a test says otherwise the release is 1.34 (the plugin's gate on by default), nodes have room
for every pod's CPU and memory, and the device class gpu.example.com selects the driver's devices.
"""
import json

from typer.testing import CliRunner

from builders import node, pod
from dra_builders import (
    allocation, claim, device, device_class, exact, first_available, gpus, resource_slice, template, with_claims,
)
from kplan.cli.app import app
from run_kplan import run_kplan

CANNOT = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"


def write(tmp_path, name, objects):
    path = tmp_path / name
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))
    return str(path)


def run(tmp_path, cluster, *pods, version="1.34", args=()):
    """Places the pods in order; returns (exit code, placements by pod name)."""
    files = [write(tmp_path, f"pod-{k}.json", [p]) for k, p in enumerate(pods)]
    result = CliRunner().invoke(app, ["place", *files, "-f", write(tmp_path, "cluster.json", cluster),
                                      "--kube-version", version, "-o", "json", "--top", "0", *args])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, {p["pod"].split("/")[1]: p for p in json.loads(result.stdout)["placements"]}


def rejected(placement, plugin="DynamicResources"):
    """The nodes `plugin` rejected, with its reasons."""
    return {n["name"]: n["reasons"] for n in placement["nodes"] if not n["feasible"] and n["plugin"] == plugin}


def gpu_pod(name, **claims):
    return with_claims(pod(name, requests={"cpu": "100m"}), **claims)


def gpu_nodes(*sizes):
    """Nodes n1, n2, ... with the given numbers of GPUs (0: none, and no slice)."""
    objects = [device_class()]
    for k, size in enumerate(sizes, start=1):
        objects.append(node(f"n{k}", cpu="64", memory="256Gi"))
        if size:
            objects.append(resource_slice(f"n{k}", gpus(size)))
    return objects


def test_exact_count_needs_that_many_free_devices_on_one_node(tmp_path):
    cluster = gpu_nodes(0, 2, 4) + [claim("three", exact(count=3))]
    _, got = run(tmp_path, cluster, gpu_pod("p", gpu="three"))
    assert got["p"]["outcome"] == "Scheduled" and got["p"]["node"] == "n3"
    assert rejected(got["p"]) == {"n1": [CANNOT], "n2": [CANNOT]}


def test_devices_of_other_allocated_claims_are_taken(tmp_path):
    # n2's four GPUs: gpu-0 and gpu-1 held by a running pod's claim, so 2 are free there.
    cluster = gpu_nodes(0, 4) + [
        claim("held", exact(count=2), allocated=allocation("n2", "gpu-0", "gpu-1"), reserved_for=["runner"]),
        claim("two", exact(count=2)), claim("three", exact(count=3))]
    _, got = run(tmp_path, cluster, gpu_pod("a", gpu="three"), gpu_pod("b", gpu="two"))
    assert got["a"]["outcome"] == "Unschedulable"
    assert got["a"]["message"] == (f"0/2 nodes are available: 2 {CANNOT}. still not schedulable, preemption: "
                                   "0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
    assert got["b"]["node"] == "n2"


def test_reserve_makes_later_pods_see_the_devices_taken(tmp_path):
    # Two claims of 3 on one node of 4 GPUs: the second pod finds 1 free.
    cluster = gpu_nodes(4) + [claim("x", exact(count=3)), claim("y", exact(count=3))]
    _, got = run(tmp_path, cluster, gpu_pod("a", gpu="x"), gpu_pod("b", gpu="y"))
    assert got["a"]["outcome"] == "Scheduled" and got["b"]["outcome"] == "Unschedulable"
    assert rejected(got["b"]) == {"n1": [CANNOT]}


def test_all_mode_takes_every_matching_device_and_fails_when_one_is_held(tmp_path):
    cluster = gpu_nodes(0, 2, 2) + [
        claim("held", exact(count=1), allocated=allocation("n2", "gpu-1"), reserved_for=["runner"]),
        claim("every", exact(mode="All")), claim("one", exact(count=1))]
    _, got = run(tmp_path, cluster, gpu_pod("a", gpu="every"), gpu_pod("b", gpu="one"))
    # n1 has no device (All needs at least one), n2 has one held: only n3.
    assert got["a"]["node"] == "n3" and rejected(got["a"]) == {"n1": [CANNOT], "n2": [CANNOT]}
    # Both of n3's devices went to the All claim; n2's gpu-0 is left.
    assert got["b"]["node"] == "n2"


def test_class_and_request_cel_selectors_choose_the_devices(tmp_path):
    cluster = [
        device_class("a100.example.com", 'device.driver == "gpu.example.com"',
                     'device.attributes["gpu.example.com"].model == "a100"'),
        node("n1", cpu="64"), node("n2", cpu="64"), node("n3", cpu="64"),
        resource_slice("n1", [device("g0", {"memory": "80Gi"}, model="t4")]),
        resource_slice("n2", [device("g0", {"memory": "40Gi"}, model="a100")]),
        resource_slice("n3", [device("g0", {"memory": "80Gi"}, model="a100")]),
        claim("big", exact(device_class_name="a100.example.com", selectors=(
            'device.capacity["gpu.example.com"].memory.compareTo(quantity("64Gi")) > 0',))),
    ]
    _, got = run(tmp_path, cluster, gpu_pod("p", gpu="big"))
    assert got["p"]["node"] == "n3" and rejected(got["p"]) == {"n1": [CANNOT], "n2": [CANNOT]}


def test_match_attribute_constraint_backtracks_to_devices_that_agree(tmp_path):
    # n1: gpu-0 on NUMA 0, gpu-1 and gpu-2 on NUMA 1. The search takes gpu-0 first, finds no second
    # device on NUMA 0, backtracks and allocates gpu-1 and gpu-2; a later pod gets gpu-0.
    cluster = [device_class(), node("n1", cpu="64"),
               resource_slice("n1", [device("gpu-0", numa=0), device("gpu-1", numa=1), device("gpu-2", numa=1)]),
               claim("pair", exact(count=2), constraints=[{"requests": ["gpu"],
                                                         "matchAttribute": "gpu.example.com/numa"}]),
               claim("numa0", exact(selectors=('device.attributes["gpu.example.com"].numa == 0',))),
               claim("pair2", exact(count=2), constraints=[{"matchAttribute": "gpu.example.com/numa"}])]
    _, got = run(tmp_path, cluster, gpu_pod("a", gpu="pair"), gpu_pod("b", gpu="numa0"))
    assert got["a"]["node"] == "n1" and got["b"]["node"] == "n1"
    _, got = run(tmp_path, cluster[:3] + [cluster[5]], gpu_pod("c", gpu="pair2"))
    assert got["c"]["node"] == "n1"
    # Without devices that agree there is no solution.
    split = cluster[:2] + [resource_slice("n1", [device("gpu-0", numa=0), device("gpu-1", numa=1)]), cluster[3]]
    _, got = run(tmp_path, split, gpu_pod("d", gpu="pair"))
    assert rejected(got["d"]) == {"n1": [CANNOT]}


def test_allocated_claim_is_usable_only_where_its_node_selector_admits(tmp_path):
    cluster = gpu_nodes(2, 2, 0) + [claim("mine", exact(), allocated=allocation("n2", "gpu-0"), reserved_for=["a"])]
    _, got = run(tmp_path, cluster, gpu_pod("a", gpu="mine"))
    assert got["a"]["node"] == "n2"
    assert rejected(got["a"]) == {"n1": [NOT_AVAILABLE], "n3": [NOT_AVAILABLE]}


def test_shared_claim_follows_the_first_pod_to_its_node(tmp_path):
    cluster = gpu_nodes(1, 1) + [claim("shared", exact())]
    _, got = run(tmp_path, cluster, gpu_pod("a", gpu="shared"), gpu_pod("b", gpu="shared"))
    first = got["a"]["node"]
    assert got["b"]["node"] == first
    assert rejected(got["b"]) == {n: [NOT_AVAILABLE] for n in ("n1", "n2") if n != first}


def test_reserved_for_limit_of_256_keeps_a_new_pod_out(tmp_path):
    full = claim("busy", exact(), allocated=allocation("n1", "gpu-0"), reserved_for=[f"u{k}" for k in range(256)])
    _, got = run(tmp_path, gpu_nodes(1) + [full], gpu_pod("p", gpu="busy"))
    assert got["p"]["message"] == ("0/1 nodes are available: resourceclaim in use. no new claims to deallocate, "
                                   "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
    # One of the 256 can still use it.
    _, got = run(tmp_path, gpu_nodes(1) + [full], gpu_pod("u7", gpu="busy"))
    assert got["u7"]["node"] == "n1"


def test_first_available_takes_the_first_alternative_that_fits(tmp_path):
    cluster = [device_class(), device_class("a100.example.com", 'device.attributes["gpu.example.com"].model == "a100"'),
               node("n1", cpu="64"), resource_slice("n1", gpus(3, model="t4")),
               claim("flex", first_available("gpu", ("big", "a100.example.com", 1), ("small", "gpu.example.com", 2))),
               claim("one", exact(count=1)), claim("two", exact(count=2))]
    # No A100 anywhere: the second alternative takes two of the three T4s; one is left.
    _, got = run(tmp_path, cluster, gpu_pod("a", gpu="flex"), gpu_pod("b", gpu="two"), gpu_pod("c", gpu="one"))
    assert got["a"]["node"] == "n1" and got["b"]["outcome"] == "Unschedulable" and got["c"]["node"] == "n1"


def test_missing_device_class_rejects_the_pod_in_prefilter(tmp_path):
    cluster = gpu_nodes(1) + [claim("c", exact(device_class_name="nope.example.com"))]
    _, got = run(tmp_path, cluster, gpu_pod("p", gpu="c"))
    assert got["p"]["message"] == ("0/1 nodes are available: request gpu: device class nope.example.com does not "
                                   "exist. no new claims to deallocate, preemption: 0/1 nodes are available: 1 "
                                   "Preemption is not helpful for scheduling.")


def test_post_filter_deallocates_an_unreserved_claim_stuck_on_another_node(tmp_path):
    # The claim is allocated on n1 (its pod is gone), where the new pod is not tolerated; on n2 the
    # claim is not available. PostFilter deallocates it; the next pod gets it allocated on n2.
    cluster = gpu_nodes(1, 1) + [claim("old", exact(), allocated=allocation("n1", "gpu-0"))]
    cluster[1]["spec"]["taints"] = [{"key": "team", "value": "x", "effect": "NoSchedule"}]
    _, got = run(tmp_path, cluster, gpu_pod("a", gpu="old"), gpu_pod("b", gpu="old"))
    assert got["a"]["message"] == (f"0/2 nodes are available: 1 node(s) had untolerated taint {{team: x}}, 1 "
                                   f"{NOT_AVAILABLE}. deallocation of ResourceClaim completed, preemption: 0/2 nodes "
                                   "are available: 2 Preemption is not helpful for scheduling.")
    assert got["b"]["node"] == "n2"


def test_claim_reserved_for_another_pod_is_not_deallocated(tmp_path):
    cluster = gpu_nodes(1, 1) + [claim("held", exact(), allocated=allocation("n1", "gpu-0"), reserved_for=["x"])]
    cluster[1]["spec"]["taints"] = [{"key": "team", "value": "x", "effect": "NoSchedule"}]
    _, got = run(tmp_path, cluster, gpu_pod("a", gpu="held"))
    assert "still not schedulable, preemption" in got["a"]["message"]


def test_missing_claims_hold_the_pod_back_in_pre_enqueue(tmp_path):
    cluster = gpu_nodes(1) + [claim("other", exact(), owner_pod="someone")]
    p = gpu_pod("p", gpu="nope")
    _, got = run(tmp_path, cluster, p)
    assert got["p"]["outcome"] == "SchedulingGated"
    assert got["p"]["message"] == 'could not find ResourceClaim "default/nope"'
    # A claim from a template must be the pod's own.
    t = gpu_pod("t", gpu="template:one")
    t["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "other"}]
    _, got = run(tmp_path, cluster, t)
    assert got["t"]["message"] == ("ResourceClaim default/other was not created for pod default/t (pod is not "
                                   "owner)")
    # No template: the controller cannot create the claim.
    _, got = run(tmp_path, cluster, gpu_pod("u", gpu="template:missing"))
    assert got["u"]["message"] == 'pod "default/u": ResourceClaim not created yet'


def test_template_claims_are_made_per_pod_and_allocated(tmp_path):
    cluster = gpu_nodes(2, 1) + [template("one", exact())]
    _, got = run(tmp_path, cluster, *(gpu_pod(f"p{k}", gpu="template:one") for k in range(4)))
    assert [got[f"p{k}"]["outcome"] for k in range(4)] == ["Scheduled"] * 3 + ["Unschedulable"]
    assert sorted(got[f"p{k}"]["node"] for k in range(3)) == ["n1", "n1", "n2"]


def test_the_plugin_is_off_in_1_33(tmp_path):
    cluster = gpu_nodes(0) + [claim("lots", exact(count=30))]
    code, got = run(tmp_path, cluster, gpu_pod("p", gpu="lots"), version="1.33")
    assert code == 0 and got["p"]["node"] == "n1"


def test_invalid_selector_is_an_input_error_naming_the_class(tmp_path):
    cluster = [device_class("broken", "device.driver =="), node("n1"), resource_slice("n1", gpus(1)),
               claim("c", exact(device_class_name="broken"))]
    code, _, err = run_kplan("place", write(tmp_path, "p.json", [gpu_pod("p", gpu="c")]),
                             "-f", write(tmp_path, "c.json", cluster), "--kube-version", "1.34")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "c.json: DynamicResources: class broken: selector #0: CEL compile error: ERROR: <input>:1:17: Syntax " \
           "error" in err


def test_selector_runtime_error_names_the_class(tmp_path):
    cluster = [device_class("m", 'device.attributes["gpu.example.com"].model == "a100"'), node("n1"),
               resource_slice("n1", [device("g0", index=1)]), claim("c", exact(device_class_name="m"))]
    code, _, err = run_kplan("place", write(tmp_path, "p.json", [gpu_pod("p", gpu="c")]),
                             "-f", write(tmp_path, "c.json", cluster), "--kube-version", "1.34")
    assert code == 2
    assert 'class m: selector #0: CEL runtime error: Key not found in map : "model"' in err


def test_beta_versions_are_read_as_v1(tmp_path):
    """v1beta1 (1.32) keeps exact requests flat and devices under `basic`; v1beta2 is v1's shape."""
    beta1_slice = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s2"},
                   "spec": {"driver": "gpu.example.com", "nodeName": "n2",
                            "pool": {"name": "n2", "generation": 1, "resourceSliceCount": 1},
                            "devices": [{"name": f"gpu-{k}", "basic": {"attributes": {"model": {"string": "t4"}}}}
                                        for k in range(2)]}}
    beta1_claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
                   "metadata": {"name": "two", "namespace": "default"},
                   "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "gpu.example.com",
                                                      "allocationMode": "ExactCount", "count": 2}]}}}
    beta2_class = {**device_class(), "apiVersion": "resource.k8s.io/v1beta2"}
    cluster = [beta2_class, node("n1"), node("n2"), resource_slice("n1", gpus(1)), beta1_slice, beta1_claim]
    _, got = run(tmp_path, cluster, gpu_pod("p", gpu="two"))
    assert got["p"]["node"] == "n2" and rejected(got["p"]) == {"n1": [CANNOT]}


def test_capacity_is_limited_by_devices_not_cpu(tmp_path):
    cluster = gpu_nodes(2, 1) + [template("one", exact())]
    pod_file = write(tmp_path, "p.json", [gpu_pod("worker", gpu="template:one")])
    result = CliRunner().invoke(app, ["capacity", pod_file, "-f", write(tmp_path, "c.json", cluster),
                                      "--kube-version", "1.34", "-o", "json"])
    report = json.loads(result.stdout)
    # 64 CPUs per node would hold hundreds of 100m pods: the three GPUs hold three.
    assert report["replicas"] == 3 and report["stopOutcome"] == "Unschedulable"
    assert report["perNode"] == {"n1": 2, "n2": 1}


def test_nodes_show_devices_per_driver(tmp_path):
    cluster = gpu_nodes(0, 4) + [claim("held", exact(count=3), allocated=allocation("n2", "gpu-0", "gpu-1", "gpu-2"),
                                       reserved_for=["x"])]
    result = CliRunner().invoke(app, ["nodes", "-f", write(tmp_path, "c.json", cluster), "-o", "json"])
    report = json.loads(result.stdout)
    by_name = {n["name"]: n for n in report["nodes"]}
    assert by_name["n1"]["devices"] == {}
    assert by_name["n2"]["devices"] == {"gpu.example.com": {"total": 4, "allocated": 3, "free": 1}}
    assert report["totals"]["devices"] == {"gpu.example.com": {"total": 4, "allocated": 3, "free": 1}}
    wide = CliRunner().invoke(app, ["nodes", "-f", write(tmp_path, "c.json", cluster), "-o", "wide"],
                              env={"COLUMNS": "300"})
    header, *rows = wide.stdout.splitlines()
    assert "GPU.EXAMPLE.COM FREE/TOTAL" in header and rows[1].split()[-1] == "1/4"


def test_nearest_nodes_say_which_claims_hold_the_devices(tmp_path):
    cluster = gpu_nodes(0, 2) + [
        claim("train-0-gpu", exact(), allocated=allocation("n2", "gpu-0"), reserved_for=["t0"]),
        claim("train-1-gpu", exact(), allocated=allocation("n2", "gpu-1"), reserved_for=["t1"]),
        claim("wants", exact()), gpu_pod("waiting", gpu="wants")]
    result = CliRunner().invoke(app, ["pending", "-f", write(tmp_path, "c.json", cluster), "--kube-version", "1.34",
                                      "-o", "json"])
    entry = json.loads(result.stdout)["pods"][0]
    near = {n["node"]: n for n in entry["nearest"]}
    assert near["n2"]["lacks"][0]["text"] == ("claim wants, request gpu (1 of class gpu.example.com): 0 of 2 "
                                              "gpu.example.com devices free (held by claims train-0-gpu, "
                                              "train-1-gpu)")
    assert near["n1"]["lacks"][0]["text"] == ("claim wants, request gpu (1 of class gpu.example.com): no device "
                                              "here matches the class and selectors")


def test_drained_pods_release_their_claims_and_get_new_ones(tmp_path):
    # The pod on n1 holds n1's only GPU through a claim from its template; drained, it gets a new
    # claim and n2's GPU, and n1's is free again.
    runner = pod("runner", node_name="n1", requests={"cpu": "100m"}, owner_kind="ReplicaSet")
    with_claims(runner, gpu="template:one")
    runner["status"]["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": "runner-gpu-abcde"}]
    cluster = gpu_nodes(1, 1) + [template("one", exact()), runner,
                                 claim("runner-gpu-abcde", exact(), allocated=allocation("n1", "gpu-0"),
                                       reserved_for=["runner"], owner_pod="runner")]
    result = CliRunner().invoke(app, ["nodes", "-f", write(tmp_path, "c.json", cluster), "--drain", "n1",
                                      "-o", "json"])
    by_name = {n["name"]: n for n in json.loads(result.stdout)["nodes"]}
    assert by_name["n1"]["devices"]["gpu.example.com"]["free"] == 1
    assert by_name["n2"]["devices"]["gpu.example.com"]["free"] == 0


def test_html_page_has_a_devices_table(tmp_path):
    cluster = gpu_nodes(0, 4) + [claim("held", exact(count=3), allocated=allocation("n2", "gpu-0", "gpu-1", "gpu-2"),
                                       reserved_for=["x"])]
    page = tmp_path / "nodes.html"
    CliRunner().invoke(app, ["nodes", "-f", write(tmp_path, "c.json", cluster), "--html", str(page)])
    html = page.read_text()
    assert "<h3>Devices (DRA)</h3>" in html
    assert ('<tr><td>n2</td><td>gpu.example.com</td><td class="num" data-v="3">3</td><td class="num" data-v="1">1'
            '</td><td class="num" data-v="4">4</td></tr>') in html
    assert "<td>n1</td><td>gpu.example.com</td>" not in html


def test_added_nodes_bring_their_template_s_devices():
    # samples/devices: the third 4-GPU replica of train fits on no node (README); one copy of the
    # GPU node template, with the ResourceSlice it publishes, takes it. Each copy has its own 8 GPUs.
    code, out, _ = run_kplan("check", "samples/devices/deployment-train.yaml", "-f", "samples/devices/cluster.yaml",
                             "--add-node", "samples/devices/node-gpu-template.yaml:auto", "-o", "json")
    report = json.loads(out)
    assert code == 0 and report["nodesNeeded"] == {"node-gpu-new": 1}
    assert sorted(p["node"] for p in report["placements"]) == ["node-gpu-1", "node-gpu-1", "node-gpu-new"]
    code, out, _ = run_kplan("nodes", "-f", "samples/devices/cluster.yaml",
                             "--add-node", "samples/devices/node-gpu-template.yaml:2", "-o", "json")
    devices = {n["name"]: n.get("devices") for n in json.loads(out)["nodes"]}
    for copy in ("node-gpu-new-1", "node-gpu-new-2"):
        assert devices[copy] == {"gpu.example.com": {"total": 8, "allocated": 0, "free": 8}}
