"""Reading a live cluster against the fake API server in fake_apiserver.py (127.0.0.1 only).

The code under test is the one used against real clusters: the official client's config loading,
its generated list calls with _preload_content=False, then Snapshot.add.
"""
import re
import socket
from pathlib import Path

import pytest
import yaml

from dra_builders import allocation, claim, device_class, exact, gpus, resource_slice, template
from fake_apiserver import FakeApiServer, write_kubeconfig
from kplan.errors import ClusterAccessError, ExitCode, InputError
from kplan.sources import live
from kplan.sources.live import LiveSource, fetch, parse_timeout, snapshot_live

ROOT = Path(__file__).resolve().parents[2]


def sample(name):
    return [o for o in yaml.safe_load_all((ROOT / "samples" / name).read_text()) if o]


EQ = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "ElasticQuota",
      "metadata": {"name": "shop-quota", "namespace": "shop"},
      "spec": {"min": {"cpu": "2"}, "max": {"cpu": "8"}}}
PDB = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web", "namespace": "shop"},
       "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
       "status": {"disruptionsAllowed": 1}}
# What PodTopologySpread's default selector reads (the server adds templates, with secrets, to the controllers).
SVC = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
       "spec": {"selector": {"app": "web"}}}
RS = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "shop"},
      "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}}}
SS = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "etl", "namespace": "analytics"},
      "spec": {"replicas": 1, "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["etl"]}]}}}
# What DynamicResources reads (resource.k8s.io/v1 on a 1.34 server).
DRA = [device_class(), resource_slice("node-a1", gpus(2)), template("one", exact(), namespace="shop"),
       {**claim("web-gpu", exact(), namespace="shop", allocated=allocation("node-a1", "gpu-0"), reserved_for=["web-1"]),
        "spec": {"devices": {"requests": [exact()], "config": [{"opaque": {"driver": "gpu.example.com",
                                                                           "parameters": {"token": "hunter2-dra"}}}]}}}]
RC = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "old", "namespace": "default"},
      "spec": {"replicas": 1, "selector": {"app": "old"}}}
# What `kplan check` rolls out and scales (the server adds templates, with secrets, to the workloads).
DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
          "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                   "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}}}
DS = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "kube-system"},
      "spec": {"selector": {"matchLabels": {"app": "agent"}}}}
HPA = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web", "namespace": "shop"},
       "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 2, "maxReplicas": 10,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                                       "averageUtilization": 60}}}]},
       "status": {"currentReplicas": 2, "desiredReplicas": 2}}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setattr(live, "PAGE_SIZE", 4)  # several pages from a small cluster
    sleeps = []
    monkeypatch.setattr(live, "_sleep", sleeps.append)
    return sleeps


@pytest.fixture
def server():
    with FakeApiServer(sample("cluster.yaml") + [EQ, PDB, SVC, RS, SS, RC, DEPLOY, DS, HPA, *DRA]) as srv:
        yield srv


@pytest.fixture
def kubeconfig(server, tmp_path):
    return write_kubeconfig(tmp_path / "kubeconfig", server.url)


def notes():
    seen = []
    return seen, seen.append


def test_lists_are_paged_and_loaded_through_the_snapshot(server, kubeconfig):
    seen, note = notes()
    snap = snapshot_live(LiveSource(kubeconfig=kubeconfig), note)
    assert len(snap.nodes) == 6 and len(snap.pods) == 13 and set(snap.namespaces) == {
        "default", "kube-system", "shop", "analytics"}
    assert list(snap.priority_classes) == ["high-priority"] and [p.name for p in snap.pdbs] == ["web"]
    assert [o["metadata"]["name"] for o in snap.objects["ElasticQuota"]] == ["shop-quota"]
    assert snap.header["context"] == "fake" and snap.header["kubeVersion"] == "v1.35.2"
    assert snap.header["counts"] == {"namespaces": 4, "priorityclasses": 1, "nodes": 6, "pods": 13,
                                     "poddisruptionbudgets": 1, "services": 1, "replicationcontrollers": 1,
                                     "replicasets": 1, "statefulsets": 1, "deployments": 1, "daemonsets": 1,
                                     "horizontalpodautoscalers": 1, "persistentvolumeclaims": 0,
                                     "persistentvolumes": 0, "storageclasses": 0, "csinodes": 0, "csidrivers": 0,
                                     "csistoragecapacities": 0, "volumeattachments": 0, "elasticquotas": 1,
                                     "deviceclasses": 1, "resourceslices": 1, "resourceclaims": 1,
                                     "resourceclaimtemplates": 1}
    assert (list(snap.devices.classes), list(snap.devices.slices), list(snap.devices.claims),
            list(snap.devices.templates)) == (["gpu.example.com"], ["node-a1-gpu.example.com"], [("shop", "web-gpu")],
                                              [("shop", "one")])
    assert [(s.namespace, s.name, s.selector) for s in snap.services] == [("shop", "web", {"app": "web"})]
    assert [o["metadata"]["name"] for o in snap.objects["Deployment"]] == ["web"]
    assert [o["metadata"]["name"] for o in snap.objects["DaemonSet"]] == ["agent"]
    assert [(h.namespace, h.name, h.target, h.min_replicas, h.max_replicas) for h in snap.hpas] == [
        ("shop", "web", ("Deployment", "shop", "web"), 2, 10)]
    assert {k: c.selector for k, c in snap.controllers.items()} == {
        ("ReplicaSet", "shop", "web"): RS["spec"]["selector"], ("StatefulSet", "analytics", "etl"): SS["spec"]["selector"],
        ("ReplicationController", "default", "old"): {"app": "old"}}
    assert not snap.skipped
    pods = [r for r in server.requests if r.path == "/api/v1/pods"]
    assert [r.query.get("limit") for r in pods] == ["4"] * 4
    assert [bool(r.query.get("continue")) for r in pods] == [False, True, True, True]
    assert {r.method for r in server.requests} == {"GET"}
    assert seen == ["the cluster does not serve NodeMetric (slo.koordinator.sh/v1alpha1): skipped"]


def test_list_items_get_kind_and_api_version_of_their_list(server, kubeconfig):
    dump = fetch(LiveSource(kubeconfig=kubeconfig), notes()[1])
    kinds = {(res.plural, item["kind"], item["apiVersion"]) for res, items in dump.lists for item in items}
    assert kinds == {("namespaces", "Namespace", "v1"), ("priorityclasses", "PriorityClass", "scheduling.k8s.io/v1"),
                     ("nodes", "Node", "v1"), ("pods", "Pod", "v1"),
                     ("poddisruptionbudgets", "PodDisruptionBudget", "policy/v1"), ("services", "Service", "v1"),
                     ("replicationcontrollers", "ReplicationController", "v1"),
                     ("replicasets", "ReplicaSet", "apps/v1"), ("statefulsets", "StatefulSet", "apps/v1"),
                     ("deployments", "Deployment", "apps/v1"), ("daemonsets", "DaemonSet", "apps/v1"),
                     ("horizontalpodautoscalers", "HorizontalPodAutoscaler", "autoscaling/v2"),
                     ("elasticquotas", "ElasticQuota", "scheduling.x-k8s.io/v1alpha1")} | {
                         (plural, kind, "resource.k8s.io/v1") for plural, kind in (
                             ("deviceclasses", "DeviceClass"), ("resourceslices", "ResourceSlice"),
                             ("resourceclaims", "ResourceClaim"), ("resourceclaimtemplates", "ResourceClaimTemplate"))}


def test_namespace_option_lists_namespaced_resources_there(server, kubeconfig):
    dump = fetch(LiveSource(kubeconfig=kubeconfig, namespace="shop"), notes()[1])
    pods = [p for res, items in dump.lists if res.plural == "pods" for p in items]
    assert pods and {p["metadata"]["namespace"] for p in pods} == {"shop"}
    assert "/api/v1/namespaces/shop/pods" in server.paths() and "/api/v1/pods" not in server.paths()
    assert "/apis/policy/v1/namespaces/shop/poddisruptionbudgets" in server.paths()
    assert {"/api/v1/namespaces/shop/services", "/apis/apps/v1/namespaces/shop/replicasets",
            "/apis/apps/v1/namespaces/shop/statefulsets",
            "/api/v1/namespaces/shop/replicationcontrollers"} <= set(server.paths())
    assert [(res.plural, len(items)) for res, items in dump.lists if res.plural in ("services", "replicasets")] == [
        ("services", 1), ("replicasets", 1)]
    assert "/api/v1/nodes" in server.paths() and dump.header["namespace"] == "shop"


@pytest.mark.parametrize("fresh_token", [False, True], ids=["restart", "continue-with-410-token"])
def test_expired_continue_token(server, kubeconfig, fresh_token):
    server.expire["/api/v1/pods"] = "fresh" if fresh_token else None
    seen, note = notes()
    snap = snapshot_live(LiveSource(kubeconfig=kubeconfig), note)
    names = [p.key for p in snap.pods]
    assert len(names) == 13 == len(set(names))  # nothing lost, nothing twice
    firsts = [r for r in server.requests if r.path == "/api/v1/pods" and not r.query.get("continue")]
    assert len(firsts) == (1 if fresh_token else 2)
    assert any("continue token expired" in n for n in seen) == fresh_token


def test_forbidden_names_the_rbac_verb_and_resource(server, kubeconfig):
    server.forbidden.add("/api/v1/pods")
    with pytest.raises(ClusterAccessError) as err:
        fetch(LiveSource(kubeconfig=kubeconfig), notes()[1])
    assert str(err.value) == ('forbidden: cannot list pods at the cluster scope (needs RBAC verb "list" on "pods")')
    assert err.value.exit_code == ExitCode.CLUSTER


def test_forbidden_custom_resource_names_its_api_group(server, kubeconfig):
    # A PodDisruptionBudget list may be refused (see test_partial_permissions): with --strict it fails the read.
    server.forbidden.add("/apis/policy/v1/namespaces/shop/poddisruptionbudgets")
    with pytest.raises(ClusterAccessError, match=r'forbidden: cannot list poddisruptionbudgets.policy in the '
                                                 r'namespace "shop" \(needs RBAC verb "list" on '
                                                 r'"poddisruptionbudgets" in API group "policy"\)'):
        fetch(LiveSource(kubeconfig=kubeconfig, namespace="shop", strict=True), notes()[1])


def test_custom_resources_not_served_are_skipped_with_one_note_per_kind(server, kubeconfig):
    server.not_served.add("/apis/scheduling.x-k8s.io/v1alpha1/elasticquotas")
    seen, note = notes()
    snap = snapshot_live(LiveSource(kubeconfig=kubeconfig), note)
    assert "ElasticQuota" not in snap.objects and len(snap.pods) == 13
    assert seen == ["the cluster does not serve ElasticQuota (scheduling.x-k8s.io/v1alpha1, "
                    "scheduling.sigs.k8s.io/v1alpha1): skipped",
                    "the cluster does not serve NodeMetric (slo.koordinator.sh/v1alpha1): skipped"]


def test_elastic_quota_of_the_old_group_is_read_too(tmp_path):
    old = {**EQ, "apiVersion": "scheduling.sigs.k8s.io/v1alpha1"}
    with FakeApiServer(sample("cluster.yaml") + [old]) as srv:
        seen, note = notes()
        snap = snapshot_live(LiveSource(kubeconfig=write_kubeconfig(tmp_path / "kc", srv.url)), note)
    assert [o["apiVersion"] for o in snap.objects["ElasticQuota"]] == ["scheduling.sigs.k8s.io/v1alpha1"]
    assert not any("ElasticQuota" in n for n in seen)


def test_dra_objects_of_a_1_32_cluster_are_read_in_v1beta1(tmp_path):
    beta = [{**o, "apiVersion": "resource.k8s.io/v1beta1"} for o in (device_class(), claim("c", {
        "name": "gpu", "deviceClassName": "gpu.example.com", "count": 2}))]
    beta.append({"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
                 "spec": {"driver": "gpu.example.com", "nodeName": "node-a1",
                          "pool": {"name": "node-a1", "generation": 1, "resourceSliceCount": 1},
                          "devices": [{"name": "gpu-0", "basic": {"attributes": {"model": {"string": "t4"}}}}]}})
    with FakeApiServer(sample("cluster.yaml") + beta, version="v1.32.4") as srv:
        srv.not_served.update(f"/apis/resource.k8s.io/v1/{plural}" for plural in (
            "deviceclasses", "resourceslices", "resourceclaims", "resourceclaimtemplates"))
        snap = snapshot_live(LiveSource(kubeconfig=write_kubeconfig(tmp_path / "kubeconfig", srv.url)), notes()[1])
        asked = [p for p in srv.paths() if "resource.k8s.io" in p]
    assert snap.devices.slices["s"].devices[0].attributes == {"model": "t4"}
    assert snap.devices.claims[("default", "c")].spec.requests[0].exactly.count == 2
    # v1 first (404), v1beta2 (404), then v1beta1; nothing read twice.
    assert asked.count("/apis/resource.k8s.io/v1beta1/deviceclasses") == 1
    assert asked.index("/apis/resource.k8s.io/v1/deviceclasses") < asked.index(
        "/apis/resource.k8s.io/v1beta1/deviceclasses")


def test_slow_reply_past_the_timeout_is_retried(server, kubeconfig, clean_env):
    server.slow["/api/v1/nodes"] = 1.5
    snap = snapshot_live(LiveSource(kubeconfig=kubeconfig, request_timeout=0.5), notes()[1])
    assert len(snap.nodes) == 6
    first_pages = [r for r in server.requests if r.path == "/api/v1/nodes" and not r.query.get("continue")]
    assert len(first_pages) == 2 and clean_env == [0.5]


def test_slow_reply_within_the_timeout_is_waited_for(server, kubeconfig, clean_env):
    server.slow["/api/v1/nodes"] = 0.3
    assert len(snapshot_live(LiveSource(kubeconfig=kubeconfig, request_timeout=5), notes()[1]).nodes) == 6
    assert clean_env == []


def test_timeouts_give_up_after_a_bounded_number_of_attempts(server, kubeconfig, clean_env):
    original = server._answer  # every request for nodes is slow: re-arm the delay each time

    def always_slow(h, path, query):
        if path == "/api/v1/nodes":
            server.slow[path] = 1.0
        original(h, path, query)

    server._answer = always_slow
    with pytest.raises(ClusterAccessError, match=r"list nodes at the cluster scope: no answer from "
                                                 r"http://127\.0\.0\.1:\d+ within 0\.3s \(3 attempts; "
                                                 r"see --request-timeout\)"):
        fetch(LiveSource(kubeconfig=kubeconfig, request_timeout=0.3), notes()[1])
    assert len([r for r in server.requests if r.path == "/api/v1/nodes"]) == live.MAX_TIMEOUTS


def test_429_honours_retry_after(server, kubeconfig, clean_env):
    server.throttle["/api/v1/pods"] = 2
    snap = snapshot_live(LiveSource(kubeconfig=kubeconfig), notes()[1])
    assert len(snap.pods) == 13 and clean_env == [1.0, 1.0]


def test_5xx_backs_off_then_gives_up_after_bounded_attempts(server, kubeconfig, clean_env):
    server.failing["/api/v1/nodes"] = 2
    assert len(snapshot_live(LiveSource(kubeconfig=kubeconfig), notes()[1]).nodes) == 6
    assert clean_env == [0.5, 1.0]
    clean_env.clear()
    server.failing["/api/v1/nodes"] = 100
    with pytest.raises(ClusterAccessError, match=r"list nodes at the cluster scope: the API server kept answering "
                                                 rf"503 Service Unavailable \(gave up after {live.MAX_ATTEMPTS} "
                                                 r"attempts"):
        fetch(LiveSource(kubeconfig=kubeconfig), notes()[1])
    assert len(clean_env) == live.MAX_ATTEMPTS - 1 and sum(clean_env) <= live.RETRY_BUDGET


def test_impersonation_headers(server, kubeconfig):
    fetch(LiveSource(kubeconfig=kubeconfig, as_user="jane", as_groups=("dev", "ops")), notes()[1])
    for r in server.requests:
        assert r.headers.get("Impersonate-User") == "jane" and r.groups == ["dev", "ops"]
    with pytest.raises(InputError, match="--as-group needs --as"):
        LiveSource(as_groups=("dev",))


def test_version_forbidden_is_a_note_not_an_error(server, kubeconfig):
    server.version_status = 403
    seen, note = notes()
    snap = snapshot_live(LiveSource(kubeconfig=kubeconfig), note)
    assert "kubeVersion" not in snap.header and "cannot read the server version (HTTP 403)" in seen[0]
    # The release then comes from the nodes' kubelets (the fake server's report v1.35.2).
    assert (snap.kube_version, snap.kube_version_source) == ((1, 35, 2), "kubelet")


# --- configuration as kubectl resolves it --------------------------------------------------


def test_kubeconfig_variable_is_a_list_and_missing_entries_are_ignored(server, tmp_path, monkeypatch):
    first = write_kubeconfig(tmp_path / "a.yaml", "http://127.0.0.1:9", contexts=("other",), current=None)
    second = write_kubeconfig(tmp_path / "b.yaml", server.url, contexts=("fake",), current="fake")
    monkeypatch.setenv("KUBECONFIG", ":".join([str(tmp_path / "missing.yaml"), second, first]))
    dump = fetch(LiveSource(), notes()[1])
    assert dump.header["context"] == "fake" and dump.header["server"] == server.url


def test_home_kubeconfig_is_the_default(server, tmp_path):
    (tmp_path / "home" / ".kube").mkdir(parents=True)
    write_kubeconfig(tmp_path / "home" / ".kube" / "config", server.url)
    assert fetch(LiveSource(), notes()[1]).header["server"] == server.url


def test_context_option_picks_the_context(tmp_path):
    with FakeApiServer(sample("cluster.yaml"), version="v1.34.1") as srv:
        kc = tmp_path / "kc.yaml"
        config = yaml.safe_load(Path(write_kubeconfig(kc, srv.url, contexts=("a", "b"), current="a")).read_text())
        config["clusters"].append({"name": "dead", "cluster": {"server": "http://127.0.0.1:9"}})
        config["contexts"][0]["context"]["cluster"] = "dead"
        kc.write_text(yaml.safe_dump(config))
        dump = fetch(LiveSource(kubeconfig=str(kc), context="b"), notes()[1])
    assert dump.header["context"] == "b" and dump.header["kubeVersion"] == "v1.34.1"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("setup,message", [
    ("refused", r"^cannot reach the API server at http://127\.0\.0\.1:\d+: connection refused$"),
    ("unknown-context", r'^context "nope" not found in kubeconfig .*kc\.yaml \(contexts: fake\)$'),
    ("bad-yaml", r"^kubeconfig .*kc\.yaml: "),
    ("not-a-kubeconfig", r"^kubeconfig .*kc\.yaml: "),
    ("no-current-context", r"^kubeconfig .*kc\.yaml: no current-context set; pass --context \(contexts: fake\)$"),
    ("missing-file", r"^--kubeconfig .*nope\.yaml: no such file$"),
    ("expired-token", r"^unauthorized: the API server at http://127\.0\.0\.1:\d+ rejected the credentials "),
    ("nothing", r"^no kubeconfig found .* and not running inside a cluster$"),
])
def test_access_errors_are_one_line(server, tmp_path, setup, message):
    kc = tmp_path / "kc.yaml"
    source = LiveSource(kubeconfig=str(kc))
    if setup == "refused":
        write_kubeconfig(kc, f"http://127.0.0.1:{closed_port()}")
    elif setup == "unknown-context":
        write_kubeconfig(kc, server.url)
        source.context = "nope"
    elif setup == "bad-yaml":
        kc.write_text("clusters: [\n")
    elif setup == "not-a-kubeconfig":
        kc.write_text("just a string\n")
    elif setup == "no-current-context":
        write_kubeconfig(kc, server.url, current=None)
    elif setup == "missing-file":
        source.kubeconfig = str(tmp_path / "nope.yaml")
    elif setup == "expired-token":
        write_kubeconfig(kc, server.url, token="expired")
    else:
        source.kubeconfig = None
    with pytest.raises(ClusterAccessError) as err:
        fetch(source, notes()[1])
    text = str(err.value)
    assert "\n" not in text and re.search(message, text), text


@pytest.mark.parametrize("text,seconds", [(None, 60.0), ("30s", 30.0), ("2m", 120.0), ("1h", 3600.0),
                                          ("500ms", 0.5), ("15", 15.0), ("0", None), ("0s", None)])
def test_parse_timeout(text, seconds):
    assert parse_timeout(text) == seconds


def test_parse_timeout_rejects_garbage():
    with pytest.raises(InputError, match="--request-timeout 'soon': not a duration"):
        parse_timeout("soon")


def test_progress_bar_only_when_asked_or_on_a_terminal(server, kubeconfig, capsys):
    assert len(snapshot_live(LiveSource(kubeconfig=kubeconfig, progress=True), notes()[1]).pods) == 13
    reader = live._Reader(None, LiveSource(), server.url, notes()[1])
    assert reader.progress().__class__.__name__ == "nullcontext"  # pytest's stderr is not a terminal


def test_sample_cluster_role_grants_every_list_kplan_sends():
    (role,) = sample("live/clusterrole.yaml")
    granted = {(group, resource) for rule in role["rules"] if "list" in rule.get("verbs", ())
               for group in rule.get("apiGroups", ()) for resource in rule.get("resources", ())}
    assert {(res.group, res.plural) for res in live.RESOURCES} <= granted
    assert any("/version/" in rule.get("nonResourceURLs", ()) and rule["verbs"] == ["get"] for rule in role["rules"])
    assert all(set(rule["verbs"]) <= {"get", "list"} for rule in role["rules"])
