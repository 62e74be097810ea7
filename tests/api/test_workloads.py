"""Workloads -> the pods their controllers would create (kplan.api.workloads, load_pods)."""
import pytest
import yaml

from builders import container, node
from kplan.api.objects import Node
from kplan.api.workloads import DAEMON_TOLERATIONS, name_suffix, template_hash
from kplan.sources.manifests import load_manifests
from kplan.errors import InputError
from kplan.planning.place import load_pods

TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [container(requests={"cpu": "500m", "memory": "1Gi"})]}}
SELECTOR = {"matchLabels": {"app": "web"}}  # apps/v1 requires one, and it must select the template's pods
JOB_TEMPLATE = {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}  # a Job's pods never Always


def write(tmp_path, *docs, name="m.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def obj(kind, name="web", namespace="shop", spec=None, api="apps/v1"):
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": namespace}, "spec": spec or {}}


def owner(pod):
    (ref,) = pod.raw["metadata"]["ownerReferences"]
    assert ref["controller"] is True
    return ref["kind"], ref["name"]


def test_pod_is_itself(tmp_path):
    path = write(tmp_path, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "solo"},
                            "spec": TEMPLATE["spec"]})
    (p,) = load_pods([path])
    assert p.key == "default/solo" and p.owner_kind == ""


def test_deployment_pods_named_after_their_replicaset(tmp_path):
    path = write(tmp_path, obj("Deployment", spec={"replicas": 3, "selector": SELECTOR, "template": TEMPLATE}))
    pods = load_pods([path])
    h = template_hash(TEMPLATE)
    assert len(h) == 10
    rs = f"web-{h}"
    rs_uid = pods[0].raw["metadata"]["ownerReferences"][0]["uid"]
    assert [p.name for p in pods] == [f"{rs}-{name_suffix(rs_uid, k)}" for k in range(3)]
    assert all(len(p.name.rsplit("-", 1)[1]) == 5 for p in pods)
    assert len({p.name for p in pods}) == 3
    for p in pods:
        assert p.namespace == "shop" and owner(p) == ("ReplicaSet", rs) and p.owner_kind == "ReplicaSet"
        assert p.labels == {"app": "web", "pod-template-hash": h}
        assert p.requests["cpu"] == 500
    # Deterministic: the same manifest gives the same names.
    assert [p.name for p in load_pods([path])] == [p.name for p in pods]
    # The replicas share one read-only spec (plugins may key caches on it).
    assert pods[0].spec is pods[1].spec


def test_deployment_replicas_default_to_one(tmp_path):
    path = write(tmp_path, obj("Deployment", spec={"selector": SELECTOR, "template": TEMPLATE}))
    assert len(load_pods([path])) == 1


def test_replicaset(tmp_path):
    path = write(tmp_path, obj("ReplicaSet", name="rs1", spec={"replicas": 2, "selector": SELECTOR,
                                                               "template": TEMPLATE}))
    pods = load_pods([path])
    assert len(pods) == 2 and all(p.name.startswith("rs1-") and owner(p) == ("ReplicaSet", "rs1") for p in pods)
    assert pods[0].labels == {"app": "web"}


def test_statefulset_ordinals(tmp_path):
    path = write(tmp_path, obj("StatefulSet", name="db", spec={"replicas": 3, "serviceName": "db",
                                                               "selector": SELECTOR, "template": TEMPLATE}))
    pods = load_pods([path])
    assert [p.name for p in pods] == ["db-0", "db-1", "db-2"]
    assert [p.labels["apps.kubernetes.io/pod-index"] for p in pods] == ["0", "1", "2"]
    assert pods[2].labels["statefulset.kubernetes.io/pod-name"] == "db-2"
    assert pods[1].spec["hostname"] == "db-1" and pods[1].spec["subdomain"] == "db"
    assert owner(pods[0]) == ("StatefulSet", "db")


@pytest.mark.parametrize("spec, count", [
    ({}, 1),                                    # parallelism defaults to 1
    ({"parallelism": 4}, 4),
    ({"parallelism": 4, "completions": 2}, 2),  # completions caps the pods running at once
    ({"parallelism": 2, "completions": 5}, 2),
    ({"parallelism": 0}, 0),
], ids=["default", "parallelism", "completions-cap", "parallelism-cap", "suspended-like"])
def test_job_parallelism(tmp_path, spec, count):
    path = write(tmp_path, obj("Job", name="etl", api="batch/v1", spec={**spec, "template": JOB_TEMPLATE}))
    pods = load_pods([path])
    assert len(pods) == count
    for p in pods:
        assert owner(p) == ("Job", "etl") and p.name.startswith("etl-")
        assert p.labels["batch.kubernetes.io/job-name"] == "etl" and p.labels["job-name"] == "etl"


def test_indexed_job(tmp_path):
    path = write(tmp_path, obj("Job", name="ix", api="batch/v1",
                               spec={"parallelism": 2, "completionMode": "Indexed", "template": JOB_TEMPLATE}))
    pods = load_pods([path])
    assert [p.name.rsplit("-", 1)[0] for p in pods] == ["ix-0", "ix-1"]
    assert [p.labels["batch.kubernetes.io/job-completion-index"] for p in pods] == ["0", "1"]
    # The job controller's manageJob: the index as annotation too, and hostname <job>-<index>.
    assert [p.annotations["batch.kubernetes.io/job-completion-index"] for p in pods] == ["0", "1"]
    assert [p.spec["hostname"] for p in pods] == ["ix-0", "ix-1"]


def test_indexed_job_keeps_the_template_subdomain(tmp_path):
    template = {**JOB_TEMPLATE, "spec": {**JOB_TEMPLATE["spec"], "subdomain": "workers"}}
    path = write(tmp_path, obj("Job", name="ix", api="batch/v1",
                               spec={"completions": 1, "completionMode": "Indexed", "template": template}))
    (pod,) = load_pods([path])
    assert (pod.spec["hostname"], pod.spec["subdomain"]) == ("ix-0", "workers")


def test_cronjob_uses_its_job_template(tmp_path):
    path = write(tmp_path, obj("CronJob", name="nightly", api="batch/v1", spec={
        "schedule": "0 3 * * *", "jobTemplate": {"spec": {"parallelism": 2, "template": JOB_TEMPLATE}}}))
    (w,) = load_manifests([path]).workloads
    assert w.kind == "CronJob" and w.wanted == 2
    pods = w.pods()
    assert len(pods) == 2
    kind, job = owner(pods[0])
    assert kind == "Job" and job.startswith("nightly-") and job[len("nightly-"):].isdigit()
    assert all(p.name.startswith(job + "-") for p in pods)


def test_daemonset_one_pod_per_node_it_would_run_on(tmp_path):
    tpl = {"metadata": {"labels": {"app": "agent"}},
           "spec": {"nodeSelector": {"kubernetes.io/os": "linux"}, "containers": [container()],
                    "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]}}
    nodes = [Node(n) for n in [
        node("a", labels={"kubernetes.io/os": "linux"}),
        node("b", labels={"kubernetes.io/os": "windows"}),                                   # selector
        node("c", labels={"kubernetes.io/os": "linux"}, taints=[{"key": "gpu", "effect": "NoSchedule"}]),
        node("d", labels={"kubernetes.io/os": "linux"}, taints=[{"key": "x", "effect": "NoExecute"}]),  # taint
        node("e", labels={"kubernetes.io/os": "linux"}, unschedulable=True,
             taints=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]),    # daemon toleration
        node("f", labels={"kubernetes.io/os": "linux"}, taints=[{"key": "y", "effect": "PreferNoSchedule"}]),
    ]]
    path = write(tmp_path, obj("DaemonSet", name="agent", namespace="kube-system",
                               spec={"selector": {"matchLabels": {"app": "agent"}}, "template": tpl}))
    pods = load_pods([path], nodes)
    targets = [p.affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
               for p in pods]
    assert targets == [[{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}]}]
                       for n in ("a", "c", "e", "f")]
    p = pods[0]
    assert owner(p) == ("DaemonSet", "agent") and p.owner_kind == "DaemonSet"
    keys = {(t.key, t.effect, t.operator) for t in p.tolerations}
    assert {(k, e, "Exists") for k, e in DAEMON_TOLERATIONS} <= keys
    assert ("node.kubernetes.io/network-unavailable", "NoSchedule", "Exists") not in keys
    assert ("gpu", "NoSchedule", "Exists") in keys
    assert p.labels["app"] == "agent" and "controller-revision-hash" in p.labels


def test_daemonset_host_network_tolerates_network_unavailable(tmp_path):
    tpl = {"metadata": {"labels": {"app": "net"}}, "spec": {"hostNetwork": True, "containers": [container()]}}
    path = write(tmp_path, obj("DaemonSet", name="net", spec={"selector": {"matchLabels": {"app": "net"}},
                                                              "template": tpl}))
    (p,) = load_pods([path], [Node(node("a"))])
    assert any(t.key == "node.kubernetes.io/network-unavailable" for t in p.tolerations)


def test_daemonset_needs_nodes(tmp_path):
    path = write(tmp_path, obj("DaemonSet", name="agent", spec={"selector": SELECTOR, "template": TEMPLATE}))
    with pytest.raises(InputError, match="depend on the nodes"):
        load_pods([path])


def test_list_and_multi_document_in_order(tmp_path):
    lst = {"apiVersion": "v1", "kind": "List", "items": [
        obj("StatefulSet", name="db", spec={"replicas": 2, "selector": SELECTOR, "template": TEMPLATE}),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ignored"}}]}
    path = write(tmp_path, lst, obj("ReplicaSet", name="rs", spec={"replicas": 1, "selector": SELECTOR,
                                                                   "template": TEMPLATE}))
    ws = load_manifests([path]).workloads
    assert [w.key for w in ws] == ["StatefulSet/shop/db", "ReplicaSet/shop/rs"]
    assert ws[1].source.endswith("(document 2)")
    assert [p.name for p in load_pods([path])][:2] == ["db-0", "db-1"]


def test_deployment_replicaset_selects_with_the_pod_template_hash(tmp_path):
    # The deployment controller's getNewReplicaSet: CloneSelectorAndAddLabel(d.Spec.Selector,
    # "pod-template-hash", hash), matchExpressions kept.
    selector = {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "NotIn",
                                                                     "values": ["batch"]}]}
    path = write(tmp_path, obj("Deployment", spec={"replicas": 2, "selector": selector, "template": TEMPLATE}))
    (w,) = load_manifests([path]).workloads
    h = template_hash(TEMPLATE)
    rs = w.controller
    assert (rs.kind, rs.namespace, rs.name) == ("ReplicaSet", "shop", f"web-{h}")
    assert rs.selector == {"matchLabels": {"app": "web", "pod-template-hash": h},
                           "matchExpressions": selector["matchExpressions"]}
    assert selector == {"matchLabels": {"app": "web"}, "matchExpressions": [
        {"key": "tier", "operator": "NotIn", "values": ["batch"]}]}  # the manifest is left alone
    pod = w.pods()[0]
    assert pod.raw["metadata"]["ownerReferences"][0]["uid"] == rs.uid


def test_replicaset_and_statefulset_are_their_pods_controllers(tmp_path):
    selector = {"matchLabels": {"app": "web"}}
    tier = {"matchExpressions": [{"key": "app", "operator": "Exists"}]}
    path = write(tmp_path, obj("ReplicaSet", name="rs1", spec={"selector": selector, "template": TEMPLATE}),
                 obj("StatefulSet", name="db", spec={"selector": tier, "template": TEMPLATE}),
                 obj("Job", name="j", spec={"template": JOB_TEMPLATE}, api="batch/v1"))
    rs, ss, job = load_manifests([path]).workloads
    assert (rs.controller.kind, rs.controller.name, rs.controller.selector) == ("ReplicaSet", "rs1", selector)
    assert (ss.controller.kind, ss.controller.name, ss.controller.selector) == ("StatefulSet", "db", tier)
    assert job.controller is None  # DefaultSelector reads no Job
    assert [ss.pods()[0].raw["metadata"]["ownerReferences"][0]["uid"]] == [ss.controller.uid]


def test_services_among_the_manifests(tmp_path):
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
           "spec": {"selector": {"app": "web"}}}
    deploy = obj("Deployment", spec={"replicas": 1, "selector": SELECTOR, "template": TEMPLATE})
    manifests = load_manifests([write(tmp_path, svc, deploy), write(tmp_path, svc, name="svc.yaml")])
    assert [w.key for w in manifests.workloads] == ["Deployment/shop/web"]
    assert [(s.namespace, s.name, s.selector) for s in manifests.services] == [("shop", "web", {"app": "web"})] * 2
    assert [c.kind for c in manifests.controllers] == ["ReplicaSet"]
    assert len(load_pods([write(tmp_path, svc, deploy)])) == 1  # Services are passed over
    with pytest.raises(InputError, match=r"svc\.yaml: no Pod or workload in it \(only Services\)"):
        load_manifests([str(tmp_path / "svc.yaml")])


@pytest.mark.parametrize("doc, message", [
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}, "no Pod or workload in it"),
    (obj("Deployment", spec={"replicas": -1, "selector": SELECTOR, "template": TEMPLATE}),
     "spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
    (obj("Deployment", spec={"replicas": 1, "selector": SELECTOR, "template": {"metadata": TEMPLATE["metadata"]}}),
     "spec.template.spec is missing"),
], ids=["no-workload", "negative-replicas", "no-template"])
def test_input_errors(tmp_path, doc, message):
    with pytest.raises(InputError, match=message):
        load_pods([write(tmp_path, doc)])
