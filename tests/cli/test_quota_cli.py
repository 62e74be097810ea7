"""The KEP 9 (capacity scheduling) seed's worked examples, run as users run them, plus `kplan quota`."""
import json
from functools import partial

from run_kplan import run_kplan

CONFIG = "samples/quota/scheduler-config.yaml"


kplan = partial(run_kplan, columns=160)


def place(cluster, *pods):
    code, out, err = kplan("place", "--config", CONFIG, "-f", f"samples/quota/{cluster}",
                           *(f"samples/quota/{p}" for p in pods), "-o", "json")
    assert err == "" or "error" not in err, err
    return code, json.loads(out)["placements"]


def test_story1_borrow_then_preemption_gives_quota_b_back_its_min():
    code, (too_many, borrow, give_back, no_more) = place(
        "story1/cluster.yaml", "story1/a-3-gpus.yaml", "story1/a-2-gpus.yaml", "story1/b-3-gpus.yaml",
        "story1/b-1-gpu.yaml")
    assert code == 1
    # UserA asks for 3 more GPUs: 4 + 3 > max 6.
    assert too_many["outcome"] == "Unschedulable"
    assert too_many["message"].startswith("0/3 nodes are available: Pod quota-a/a-3 is rejected in PreFilter "
                                          "because ElasticQuota quota-a is more than Max.")
    # 2 more reach max 6, borrowing 2 of QuotaB's min; the only free GPUs are on gpu-1.
    assert (borrow["outcome"], borrow["node"]) == ("Scheduled", "gpu-1")
    # UserB asks for 3 more: within its min, the borrowed pod of UserA goes.
    assert (give_back["outcome"], give_back["node"]) == ("NeedsPreemption", "gpu-1")
    assert give_back["message"] == ("0/3 nodes are available: Pod quota-b/b-3 is rejected in PreFilter because "
                                    "total ElasticQuota used is more than min.")
    assert give_back["preemption"]["victims"] == ["quota-a/a-3"]
    assert give_back["candidates"] == [{"node": "gpu-1", "victims": ["quota-a/a-3"], "pdbViolations": 0}]
    quotas = {q["namespace"]: (q["before"]["nvidia.com/gpu"], q["after"]["nvidia.com/gpu"])
              for q in give_back["preemption"]["quota"]}
    assert quotas == {"quota-b": ("3", "6"), "quota-a": ("6", "4")}  # "from 6/3 to 4/6"
    # One more GPU for UserB: over its min, and UserA's GPUs are all guaranteed now.
    assert no_more["outcome"] == "Unschedulable" and no_more["preemption"] is None
    assert no_more["message"].endswith(
        "0/3 nodes are available: 1 No victims found on node gpu-1 for preemptor pod b-4, "
        "1 No victims found on node gpu-2 for preemptor pod b-4, 1 No victims found on node gpu-3 for preemptor pod b-4.")


def test_story2_victim_from_the_quota_over_its_min():
    code, (p,) = place("story2/cluster-step1.yaml", "story2/b-1-gpu.yaml")
    assert code == 1 and p["outcome"] == "NeedsPreemption"
    # QuotaA (4 > min 3) lends; QuotaC (3 = min) does not; gpu-2's victim started later.
    assert {c["node"]: c["victims"] for c in p["candidates"]} == {"gpu-1": ["quota-a/a-1"], "gpu-2": ["quota-a/a-2"]}
    assert (p["node"], p["preemption"]["victims"]) == ("gpu-2", ["quota-a/a-2"])


def test_story2_victim_from_the_same_quota_when_over_its_min():
    code, (p,) = place("story2/cluster-step2.yaml", "story2/pod-c.yaml")
    assert code == 1 and p["outcome"] == "NeedsPreemption"
    assert (p["node"], p["preemption"]["victims"]) == ("gpu-2", ["quota-b/pod-a"])
    assert p["candidates"] == [{"node": "gpu-2", "victims": ["quota-b/pod-a"], "pdbViolations": 0}]


def test_cross_namespace_high_priority_pod_cannot_preempt_another_namespace():
    code, (nginx1, nginx2) = place("cross-namespace/cluster.yaml", "cross-namespace/quota1-nginx.yaml",
                                   "cross-namespace/quota2-nginx.yaml")
    assert code == 1
    assert nginx1["outcome"] == "Scheduled"  # borrows quota3's unused min
    assert nginx2["outcome"] == "Unschedulable" and nginx2["podInfo"]["priority"] == 1000000
    assert nginx2["message"] == (
        "0/1 nodes are available: Pod quota2/nginx-6799fc88d8-q2xyz is rejected in PreFilter because total "
        "ElasticQuota used is more than min. 0/1 nodes are available: 1 No victims found on node node-1 for "
        "preemptor pod nginx-6799fc88d8-q2xyz.")


def test_cross_node_preemption_fails():
    code, (p,) = place("cross-node/cluster.yaml", "cross-node/quota2-nginx.yaml")
    assert code == 1 and p["outcome"] == "Unschedulable" and p["candidates"] == []
    assert p["message"] == ("0/2 nodes are available: Pod quota2/nginx-5c7588df-zzzzz is rejected in PreFilter "
                            "because total ElasticQuota used is more than min. 0/2 nodes are available: "
                            "2 global quota max exceeded.")


def test_story1_table_output_names_victims_and_quota_change():
    code, out, _ = kplan("place", "--config", CONFIG, "-f", "samples/quota/story1/cluster.yaml",
                         "samples/quota/story1/a-2-gpus.yaml", "samples/quota/story1/b-3-gpus.yaml")
    assert code == 1
    assert "NeedsPreemption" in out
    assert "Preemption by CapacityScheduling: nominated node gpu-1, evicting 1 pod(s): quota-a/a-3" in out
    assert "USED BEFORE" in out


# -- kplan quota status ------------------------------------------------------------------------------

def test_quota_status_json_contract():
    code, out, _ = kplan("quota", "status", "-f", "samples/quota/story1/cluster.yaml", "-A", "-o", "json")
    assert code == 0
    report = json.loads(out)
    assert report["apiVersion"] == "kplan/v1alpha1" and report["kind"] == "QuotaStatus"
    a, b = report["quotas"]
    assert (a["namespace"], a["name"]) == ("quota-a", "quota-a")
    gpu = "nvidia.com/gpu"
    assert (a["min"][gpu], a["max"][gpu], a["used"][gpu], a["borrowed"][gpu], a["lendable"][gpu]) == ("4", "6", "4", "0", "0")
    assert (b["used"][gpu], b["lendable"][gpu], b["share"][gpu]) == ("3", "3", 0.5)
    assert a["max"]["memory"] == "0"  # max lists only GPUs: memory is bounded at 0
    assert report["cluster"]["capacity"][gpu] == "10" and report["cluster"]["totalMin"][gpu] == "10"
    assert report["cluster"]["totalUsed"][gpu] == "7"
    assert any("spec.max omits cpu, memory" in w for w in report["warnings"])


def test_quota_status_namespace_filter_and_borrowing():
    code, out, _ = kplan("quota", "status", "-f", "samples/quota/story2/cluster-step1.yaml", "-n", "quota-a", "-o", "json")
    assert code == 0
    (a,) = json.loads(out)["quotas"]
    assert a["borrowing"] and a["overMin"] and a["borrowed"]["nvidia.com/gpu"] == "1"


def test_quota_status_default_namespace_and_table():
    code, out, _ = kplan("quota", "status", "-f", "samples/quota/story1/cluster.yaml")
    assert code == 0 and "No ElasticQuota in namespace default" in out and "CAPACITY" in out
    code, out, _ = kplan("quota", "status", "-f", "samples/quota/story1/cluster.yaml", "-A")
    assert code == 0 and "LENDABLE" in out and "quota-b" in out


def test_quota_status_warns_when_sum_of_min_exceeds_capacity(tmp_path):
    cluster = tmp_path / "c.yaml"
    cluster.write_text("""
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}}
---
apiVersion: scheduling.sigs.k8s.io/v1alpha1
kind: ElasticQuota
metadata: {name: q, namespace: team}
spec: {min: {cpu: "3", memory: 1Gi}, max: {cpu: "4", memory: 2Gi}}
status: {used: {cpu: 500m, memory: "0"}}
""")
    code, out, _ = kplan("quota", "status", "-f", str(cluster), "-A", "-o", "json")
    report = json.loads(out)
    assert code == 0
    assert any("the sum of min for cpu (3) is above the cluster's capacity (2)" in w for w in report["warnings"])
    (q,) = report["quotas"]
    assert q["statusUsed"] == {"cpu": "500m", "memory": "0"}
    # The pods of team request nothing: status.used's 500m cpu differs, its memory "0" does not.
    assert any(w.startswith("status.used differs from the pods' requests for cpu (") for w in q["warnings"])


def _teams(tmp_path, count: int):
    """A node and `count` namespaces, each with a quota whose max omits ephemeral-storage; team-0 uses
    63800m cpu and 355840Mi memory of its min 72 and 270Gi (the issue's mixed-unit column)."""
    docs = ["""apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "96", memory: 512Gi, pods: "110"}}"""]
    for k in range(count):
        docs.append(f"""apiVersion: scheduling.sigs.k8s.io/v1alpha1
kind: ElasticQuota
metadata: {{name: q, namespace: team-{k}}}
spec: {{min: {{cpu: "72", memory: 270Gi}}, max: {{cpu: "80", memory: 300Gi}}}}""")
    docs.append("""apiVersion: v1
kind: Pod
metadata: {name: big, namespace: team-0}
spec:
  nodeName: n1
  containers: [{name: c, resources: {requests: {cpu: 63800m, memory: 355840Mi}}}]
status: {phase: Running}""")
    path = tmp_path / "teams.yaml"
    path.write_text("\n---\n".join(docs))
    return str(path)


def test_quota_status_one_unit_per_resource(tmp_path):
    code, out, _ = kplan("quota", "status", "-f", _teams(tmp_path, 1), "-A")
    assert code == 0
    rows = {tuple(line.split()[:3]): line.split()[3:] for line in out.splitlines() if line.startswith("team-0 ")}
    # min, max, used, borrowed, lendable, share: cores beside cores, Gi beside Gi; 355840Mi = 347.5Gi,
    # above the min (77.5Gi borrowed); 72 - 63.8 = 8.2 cores lendable.
    assert rows[("team-0", "q", "cpu")] == ["72", "80", "63.8", "0", "8.2", "89%"]
    assert rows[("team-0", "q", "memory")] == ["270Gi", "300Gi", "347.5Gi", "77.5Gi", "0", "129%"]
    code, out, _ = kplan("quota", "status", "-f", _teams(tmp_path, 1), "-A", "-o", "json")
    (q,) = json.loads(out)["quotas"]
    assert (q["used"]["cpu"], q["used"]["memory"]) == ("63800m", "355840Mi")  # exact in the JSON


def test_quota_status_groups_warnings_of_one_kind(tmp_path):
    path = _teams(tmp_path, 5)
    code, out, _ = kplan("quota", "status", "-f", path, "-A")
    warnings = [line for line in out.splitlines() if line.startswith("warning: ")]
    assert sum("the sum of min for cpu (360)" in w for w in warnings) == 1  # not about one quota: as it is
    assert [w for w in warnings if "spec.max" in w] == ["warning: spec.max omits ephemeral-storage: upstream bounds it at 0, so any pod requesting "
                        "it is rejected (5 quotas: team-0/q, team-1/q, team-2/q, … (2 more; -v lists all))"]
    code, out, _ = kplan("quota", "status", "-f", path, "-A", "-v")
    assert [line for line in out.splitlines() if line.startswith("warning: spec.max")] == [
        "warning: spec.max omits ephemeral-storage: upstream bounds it at 0, so any pod requesting it is rejected "
        "(5 quotas: team-0/q, team-1/q, team-2/q, team-3/q, team-4/q)"]
    code, out, _ = kplan("quota", "status", "-f", path, "-A", "-o", "json")
    assert sum("spec.max" in w for w in json.loads(out)["warnings"]) == 5  # the JSON keeps one per quota
    code, out, _ = kplan("quota", "status", "-f", path, "-n", "team-3")
    assert [line for line in out.splitlines() if line.startswith("warning: team-3")] == [
        "warning: team-3/q: spec.max omits ephemeral-storage: upstream bounds it at 0, so any pod requesting it is "
        "rejected"]


def test_quota_status_rejects_both_namespace_flags():
    code, _, err = kplan("quota", "status", "-f", "samples/quota/story1/cluster.yaml", "-n", "x", "-A")
    assert code == 2 and "exclude each other" in err


# -- kplan quota check -------------------------------------------------------------------------------

def test_quota_check_reports_prefilter_verdict_and_victims():
    code, out, _ = kplan("quota", "check", "-f", "samples/quota/story1/cluster.yaml",
                         "samples/quota/story1/a-2-gpus.yaml", "samples/quota/story1/b-3-gpus.yaml", "-o", "json")
    assert code == 1
    report = json.loads(out)
    assert report["kind"] == "QuotaCheck"
    first, second = report["checks"]
    assert first["preFilter"] == {"passed": True, "message": ""} and first["placement"]["outcome"] == "Scheduled"
    assert second["preFilter"]["passed"] is False
    assert second["quota"]["used"]["nvidia.com/gpu"] == "3"
    assert second["placement"]["preemption"]["victims"] == ["quota-a/a-3"]


def test_quota_check_exit_0_when_the_pod_fits_its_quota():
    code, out, _ = kplan("quota", "check", "-f", "samples/quota/story1/cluster.yaml", "samples/quota/story1/a-2-gpus.yaml")
    assert code == 0 and "Quota check: passed" in out
