"""`kplan check` of workloads the snapshot runs (rollouts), of autoscaled workloads and of Jobs, through
the real entry point. Expectations are worked out by hand from the controllers' rules (see
kplan/planning/rollout.py for the rules and their upstream sources)."""
import json
import xml.etree.ElementTree as ET
from functools import partial

import pytest
import yaml

from builders import container, node, pod, ready
from run_kplan import ROOT, run_kplan

kplan = partial(run_kplan, columns=250)
CLUSTER = "samples/rollout/cluster.yaml"
STUCK = "samples/rollout/web-v2.yaml"
ROLLS = "samples/rollout/web-v2-unavailable.yaml"
ANTI = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}


def write(path, *docs):
    path.write_text(yaml.safe_dump_all(list(docs), sort_keys=False))
    return str(path)


def deployment(name="web", replicas=3, cpu="3", strategy=None, affinity=None, ns="shop", image="app:2"):
    spec = {"containers": [container("web", {"cpu": cpu}, image=image)]}
    if affinity:
        spec["affinity"] = affinity
    body = {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}
    if strategy is not None:
        body["strategy"] = strategy
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns}, "spec": body}


def rolling(surge, unavailable):
    return {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}


def running_deployment(nodes, cpu="3", name="web", ns="shop", per_node=1, affinity=None):
    """A Deployment the snapshot runs: the object, its ReplicaSet and `per_node` ready pods on each node,
    created a minute apart in node order."""
    rs = f"{name}-7c5d8f9b6d"
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": f"uid-{rs}", "controller": True}
    objs = [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
             "spec": {"replicas": len(nodes) * per_node, "selector": {"matchLabels": {"app": name}}}},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": rs, "namespace": ns, "uid": f"uid-{rs}"},
             "spec": {"selector": {"matchLabels": {"app": name, "pod-template-hash": "7c5d8f9b6d"}}}}]
    k = 0
    for n in nodes:
        for _ in range(per_node):
            p = ready(pod(f"{rs}-old{k}", ns, node_name=n, requests={"cpu": cpu},
                          labels={"app": name, "pod-template-hash": "7c5d8f9b6d"}))
            p["metadata"]["ownerReferences"] = [owner]
            p["metadata"]["creationTimestamp"] = f"2026-11-20T10:{k:02d}:00Z"
            if affinity:
                p["spec"]["affinity"] = affinity
            objs.append(p)
            k += 1
    return objs


def check_json(*args):
    code, out, err = kplan("check", *args, "-o", "json")
    assert code in (0, 1), err
    return code, json.loads(out)


# -- Deployment --------------------------------------------------------------------------------------

def test_rollout_that_completes_replaces_the_newest_old_pod_first():
    # 4-CPU nodes each run a 3-CPU old pod and a 500m agent: 500m free. maxSurge 0, maxUnavailable 1:
    # delete one old pod (newest first: node-c's, created last), its node takes the new pod, and so on.
    code, report = check_json(ROLLS, "-f", CLUSTER)
    assert code == 0
    (w,) = report["workloads"]
    r = w["rollout"]
    assert (r["strategy"], r["maxSurge"], r["maxUnavailable"], r["oldPods"], r["newPods"]) == (
        "RollingUpdate", 0, 1, 3, 3)
    assert [(s["action"], s["created"], s["deleted"]) for s in r["steps"]] == [
        ("scale down", 0, 1), ("scale up", 1, 0)] * 3
    assert [s["step"] for s in r["steps"]] == [1, 2, 3, 4, 5, 6]
    assert r["done"] and r["stuck"] is None and w["passed"]
    assert [p["node"] for p in report["placements"]] == ["node-c", "node-b", "node-a"]


def test_nodes_needed_for_a_stuck_rollout_count_the_pods_it_frees(tmp_path):
    # samples/rollout: maxSurge 1, maxUnavailable 0 is stuck on three full 4-CPU nodes (README). One
    # added 4-CPU node takes the surge pod; each old pod deleted then leaves its node 3 CPUs for the
    # next new one: one node is enough, though the three new pods ask 9 CPUs.
    spare = write(tmp_path / "spare.yaml", node("spare", cpu="4", memory="16Gi"))
    code, report = check_json(STUCK, "-f", CLUSTER, "--add-node", f"{spare}:auto")
    (w,) = report["workloads"]
    assert code == 0 and report["nodesNeeded"] == {"spare": 1}
    assert w["rollout"]["done"] and w["passed"]


def test_max_unavailable_0_on_a_full_cluster_is_stuck(tmp_path):
    junit = tmp_path / "kplan.xml"
    summary = tmp_path / "summary.md"
    code, out, _ = kplan("check", STUCK, "-f", CLUSTER, "--junit", str(junit), "--github",
                         env={"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_WORKSPACE": str(ROOT)})
    assert code == 1
    line = "rollout stuck at 0 of 3 new pods: 0/3 nodes are available: 3 Insufficient cpu."
    assert line in out
    assert "stuck after step 1 of the rollout: 3 old and 0 new pod(s) run, 1 new pending" in out
    failure = ET.parse(junit).getroot().find("testsuite/testcase/failure")
    assert failure.get("message").startswith(line) and failure.get("type") == "RolloutStuck"
    (annotation,) = [ln for ln in out.splitlines() if ln.startswith("::error")]
    assert annotation.startswith(f"::error file={STUCK},title=kplan NodeResourcesFit::Deployment/shop/web: "
                                 f"0/3 replicas placed; {line}")
    assert line in summary.read_text()
    code, report = check_json(STUCK, "-f", CLUSTER)
    (w,) = report["workloads"]
    assert [(s["action"], s["created"]) for s in w["rollout"]["steps"]] == [("scale up", 1)]
    assert w["rollout"]["stuck"] == {
        "afterStep": 1, "oldPods": 3, "oldRunning": 3, "newRunning": 0, "newPending": 1,
        "reason": w["firstFailure"]["message"], "summary": f"rollout stuck at 0 of 3 new pods: {w['firstFailure']['message']}"}
    assert w["firstFailure"]["hints"] == ["3 nodes would fit with 2500m more cpu free"]


def test_no_rollout_creates_the_new_pods_beside_the_old_ones():
    code, report = check_json(STUCK, "-f", CLUSTER, "--no-rollout")
    (w,) = report["workloads"]
    assert code == 1 and "rollout" not in w and (w["placed"], w["unschedulable"]) == (0, 3)


def test_hostname_anti_affinity_with_max_surge_1_is_stuck(tmp_path):
    # One old pod per node, each node roomy: the surge pod's required anti-affinity refuses every node.
    nodes = ["n1", "n2", "n3"]
    cluster = write(tmp_path / "cluster.yaml", *(node(n, cpu=16) for n in nodes),
                    *running_deployment(nodes, cpu="1", affinity=ANTI))
    stuck = write(tmp_path / "stuck.yaml", deployment(cpu="1", strategy=rolling(1, 0), affinity=ANTI))
    code, report = check_json(stuck, "-f", cluster)
    (w,) = report["workloads"]
    assert code == 1 and w["rollout"]["stuck"]["summary"].startswith(
        "rollout stuck at 0 of 3 new pods: 0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules.")
    assert w["firstFailure"]["plugin"] == "InterPodAffinity"
    # maxUnavailable 1 instead: an old pod goes first and frees its node.
    rolls = write(tmp_path / "rolls.yaml", deployment(cpu="1", strategy=rolling(0, 1), affinity=ANTI))
    code, report = check_json(rolls, "-f", cluster)
    assert code == 0 and report["workloads"][0]["rollout"]["done"]


def full_cluster(tmp_path, replicas):
    nodes = [f"n{k}" for k in range(replicas)]
    return write(tmp_path / "cluster.yaml", *(node(n, cpu=4) for n in nodes), *running_deployment(nodes, cpu="3"))


def test_percentages_round_as_the_controller_rounds_them(tmp_path):
    # 5 replicas, 10%: maxSurge rounds up to 1, maxUnavailable down to 0: on full nodes the surge pod is stuck.
    cluster = full_cluster(tmp_path, 5)
    code, report = check_json(write(tmp_path / "a.yaml", deployment(replicas=5, strategy=rolling("10%", "10%"))),
                              "-f", cluster)
    r = report["workloads"][0]["rollout"]
    assert code == 1 and (r["maxSurge"], r["maxUnavailable"]) == (1, 0)
    assert r["stuck"]["summary"].startswith("rollout stuck at 0 of 5 new pods")
    # maxSurge 0 and 10% of 5 rounded down: both 0, so maxUnavailable becomes 1 and the rollout goes through.
    code, report = check_json(write(tmp_path / "b.yaml", deployment(replicas=5, strategy=rolling(0, "10%"))),
                              "-f", cluster)
    r = report["workloads"][0]["rollout"]
    assert code == 0 and (r["maxSurge"], r["maxUnavailable"]) == (0, 1) and r["done"]
    assert len(r["steps"]) == 10


def test_default_strategy_surges_25_percent_up_and_takes_25_percent_down(tmp_path):
    # 10 replicas on roomy nodes, the default 25%/25%: surge ceil(2.5) = 3, unavailable floor(2.5) = 2.
    # Step 1 creates 3 (13 pods); step 2 deletes 13 - (10 - 2) - 0 = 5 old; step 3 creates 15 - 8 ... = 5 more.
    nodes = [f"n{k}" for k in range(10)]
    cluster = write(tmp_path / "cluster.yaml", *(node(n, cpu=16) for n in nodes), *running_deployment(nodes, cpu="1"))
    code, report = check_json(write(tmp_path / "d.yaml", deployment(replicas=10, cpu="1")), "-f", cluster)
    r = report["workloads"][0]["rollout"]
    assert code == 0 and (r["maxSurge"], r["maxUnavailable"]) == (3, 2)
    assert [(s["created"], s["deleted"]) for s in r["steps"]] == [(3, 0), (0, 5), (5, 0), (0, 5), (2, 0)]


def test_recreate_deletes_every_old_pod_first(tmp_path):
    cluster = full_cluster(tmp_path, 3)
    code, report = check_json(write(tmp_path / "r.yaml", deployment(strategy={"type": "Recreate"})), "-f", cluster)
    r = report["workloads"][0]["rollout"]
    assert code == 0 and [(s["action"], s["created"], s["deleted"]) for s in r["steps"]] == [
        ("scale down", 0, 3), ("scale up", 3, 0)]


def test_a_bad_strategy_is_one_line_and_exit_2(tmp_path):
    bad = write(tmp_path / "bad.yaml", deployment(strategy=rolling(0, 0)))
    code, out, err = kplan("check", bad, "-f", CLUSTER)
    assert code == 2 and out == ""
    assert err.strip() == (f'kplan: error: {bad}: Deployment "web": spec.strategy.rollingUpdate.maxUnavailable: '
                           "Invalid value: 0: may not be 0 when `maxSurge` is 0")


# -- StatefulSet -------------------------------------------------------------------------------------

def running_stateful_set(nodes, name="db", ns="shop", cpu="1"):
    owner = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": name, "uid": f"uid-{name}", "controller": True}
    objs = [{"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": ns,
                                                                           "uid": f"uid-{name}"},
             "spec": {"selector": {"matchLabels": {"app": name}}}}]
    for k, n in enumerate(nodes):
        p = ready(pod(f"{name}-{k}", ns, node_name=n, requests={"cpu": cpu}, labels={"app": name}))
        p["metadata"]["ownerReferences"] = [owner]
        objs.append(p)
    return objs


def stateful_set(replicas=3, cpu="1", rolling_update=None, name="db", ns="shop"):
    spec = {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [container("db", {"cpu": cpu}, image="db:2")]}}}
    if rolling_update is not None:
        spec["updateStrategy"] = {"type": "RollingUpdate", "rollingUpdate": rolling_update}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def test_stateful_set_partition_replaces_only_the_ordinals_at_or_above_it(tmp_path):
    cluster = write(tmp_path / "cluster.yaml", *(node(n, cpu=4) for n in ("n0", "n1", "n2")),
                    *running_stateful_set(["n0", "n1", "n2"]))
    code, report = check_json(write(tmp_path / "db.yaml", stateful_set(rolling_update={"partition": 2})),
                              "-f", cluster)
    (w,) = report["workloads"]
    r = w["rollout"]
    assert code == 0 and r["done"] and r["partition"] == 2
    assert [(s["action"], s["created"], s["deleted"]) for s in r["steps"]] == [
        ("delete for update", 0, 1), ("create", 1, 0)]
    assert [p["pod"] for p in report["placements"]] == ["shop/db-2"] and w["placed"] == 1


@pytest.mark.parametrize("release, steps", [
    ("1.34", [("delete for update", 1), ("create", 1)] * 3),  # MaxUnavailableStatefulSet off: one at a time
    ("1.35", [("delete for update", 2), ("create", 1), ("create", 1), ("delete for update", 1), ("create", 1)]),
])
def test_stateful_set_max_unavailable_from_1_35(tmp_path, release, steps):
    cluster = write(tmp_path / "cluster.yaml", *(node(n, cpu=4) for n in ("n0", "n1", "n2")),
                    *running_stateful_set(["n0", "n1", "n2"]))
    manifest = write(tmp_path / "db.yaml", stateful_set(rolling_update={"maxUnavailable": 2}))
    code, report = check_json(manifest, "-f", cluster, "--kube-version", release)
    r = report["workloads"][0]["rollout"]
    assert code == 0 and r["done"]
    assert [(s["action"], s["created"] or s["deleted"]) for s in r["steps"]] == steps


# -- DaemonSet ---------------------------------------------------------------------------------------

def daemon_set(rolling_update):
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "kube-system"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling_update},
                     "template": {"metadata": {"labels": {"app": "agent"}},
                                  "spec": {"containers": [container("agent", {"cpu": "500m"}, image="agent:3")]}}}}


def test_daemon_set_surge_on_a_full_node_is_stuck(tmp_path):
    # node-a: the old agent (500m) and a 3500m pod fill its 4 CPUs; node-b is empty but for its agent.
    owner = {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "uid-agent", "controller": True}
    agents = []
    for n in ("node-a", "node-b"):
        p = ready(pod(f"agent-{n}", "kube-system", node_name=n, requests={"cpu": "500m"}, labels={"app": "agent"}))
        p["metadata"]["ownerReferences"] = [owner]
        agents.append(p)
    cluster = write(tmp_path / "cluster.yaml", node("node-a", cpu=4), node("node-b", cpu=4), *agents,
                    pod("big", node_name="node-a", requests={"cpu": "3500m"}),
                    {"apiVersion": "apps/v1", "kind": "DaemonSet",
                     "metadata": {"name": "agent", "namespace": "kube-system"},
                     "spec": {"selector": {"matchLabels": {"app": "agent"}}}})
    code, report = check_json(write(tmp_path / "ds.yaml", daemon_set({"maxSurge": 1, "maxUnavailable": 0})),
                              "-f", cluster)
    (w,) = report["workloads"]
    r = w["rollout"]
    assert code == 1 and (r["maxSurge"], r["maxUnavailable"]) == (1, 0)
    assert [(s["created"], s["deleted"]) for s in r["steps"]] == [(1, 0)]  # node-a first, by name
    # The new pod's matchFields node affinity narrows PreFilter to node-a: node-b "didn't satisfy plugin(s)".
    assert r["stuck"]["summary"] == ("rollout stuck at 0 of 2 new pods: 0/2 nodes are available: 1 Insufficient cpu, "
                                     "1 node(s) didn't satisfy plugin(s) [NodeAffinity]. no new claims to "
                                     "deallocate, preemption: 0/2 nodes are available: 1 No preemption victims found "
                                     "for incoming pod, 1 Preemption is not helpful for scheduling.")
    # Without surge the old agent goes first, one node at a time.
    code, report = check_json(write(tmp_path / "ds1.yaml", daemon_set({"maxSurge": 0, "maxUnavailable": 1})),
                              "-f", cluster)
    r = report["workloads"][0]["rollout"]
    assert code == 0 and [(s["created"], s["deleted"]) for s in r["steps"]] == [(0, 1), (1, 0)] * 2


# -- HorizontalPodAutoscaler and Jobs ----------------------------------------------------------------

def hpa(target="api", low=2, high=5, ns="shop"):
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": target, "namespace": ns},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
                     "minReplicas": low, "maxReplicas": high}}


def test_hpa_maximum_that_does_not_fit(tmp_path):
    # Three 4-CPU nodes hold three 3-CPU pods: minReplicas 2 fits, maxReplicas 5 does not.
    cluster = write(tmp_path / "cluster.yaml", *(node(f"n{k}", cpu=4) for k in range(3)))
    manifest = write(tmp_path / "api.yaml", deployment("api", replicas=1), hpa())
    code, report = check_json(manifest, "-f", cluster)
    (w,) = report["workloads"]
    assert code == 0 and (w["wanted"], w["placed"]) == (2, 2)
    assert w["hpa"] == {"name": "shop/api", "source": f"{manifest} (document 2)", "minReplicas": 2, "maxReplicas": 5,
                        "replicas": 2, "atMax": False}
    code, report = check_json(manifest, "-f", cluster, "--at-max")
    (w,) = report["workloads"]
    assert code == 1 and (w["wanted"], w["placed"], w["hpa"]["replicas"], w["hpa"]["atMax"]) == (5, 3, 5, True)
    code, out, _ = kplan("capacity", manifest, "-f", cluster)
    assert code == 0 and "api: 3 of maxReplicas 5 fit" in out
    code, out, _ = kplan("capacity", manifest, "-f", cluster, "-o", "json")
    assert json.loads(out)["hpa"]["fit"] == 3


def test_hpa_in_the_snapshot_scales_the_manifest_workload(tmp_path):
    code, report = check_json(ROLLS, "-f", CLUSTER, "--at-max")
    (w,) = report["workloads"]
    assert code == 1 and w["wanted"] == 6 and w["hpa"]["source"].startswith(CLUSTER)


def test_at_max_without_an_autoscaler_says_so(tmp_path):
    code, _, err = kplan("check", "samples/check/apps.yaml", "-f", "samples/cluster.yaml", "--at-max")
    assert code == 0 and "--at-max: no HorizontalPodAutoscaler" in err


def test_job_parallelism_bounded_by_completions_and_indexed_pods(tmp_path):
    # One 4-CPU node: two 2-CPU pods run at once; parallelism 3 bounded by completions 2 asks for two.
    cluster = write(tmp_path / "cluster.yaml", node("n0", cpu=4))
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "train", "namespace": "ml"},
           "spec": {"parallelism": 3, "completions": 2, "completionMode": "Indexed",
                    "template": {"spec": {"restartPolicy": "Never", "subdomain": "train",
                                          "containers": [container("t", {"cpu": "2"})]}}}}
    code, report = check_json(write(tmp_path / "job.yaml", job), "-f", cluster)
    (w,) = report["workloads"]
    assert code == 0 and (w["wanted"], w["placed"]) == (2, 2)
    assert [p["pod"].rsplit("-", 1)[0] for p in report["placements"]] == ["ml/train-0", "ml/train-1"]
    job["spec"]["parallelism"] = job["spec"]["completions"] = 3
    code, report = check_json(write(tmp_path / "job3.yaml", job), "-f", cluster)
    assert code == 1 and (report["workloads"][0]["wanted"], report["workloads"][0]["placed"]) == (3, 2)
