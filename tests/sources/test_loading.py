"""Reading dumps: formats kubectl writes, folders, stdin, gzip, and bad input."""
import gzip
import io
import json

import pytest
import yaml

from builders import node, pod
from kplan.api.quantity import InvalidQuantity
from kplan.errors import InputError
from kplan.sources.snapshot import load_snapshot


def write(path, text):
    path.write_text(text)
    return str(path)


def test_multi_document_yaml_and_unknown_kinds_counted(tmp_path):
    docs = [node("n1"), pod("a", node_name="n1"), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}]
    snap = load_snapshot([write(tmp_path / "c.yaml", yaml.safe_dump_all(docs))])
    assert [n.name for n in snap.nodes] == ["n1"] and [p.name for p in snap.pods] == ["a"]
    assert snap.skipped == {"ConfigMap (v1)": 1}


def test_json_list_and_typed_list_without_item_kinds(tmp_path):
    items = [dict(node("n1")), dict(node("n2"))]
    for item in items:
        del item["kind"]
    typed = {"apiVersion": "v1", "kind": "NodeList", "items": items}
    generic = {"apiVersion": "v1", "kind": "List", "items": [pod("a", node_name="n1")]}
    snap = load_snapshot([write(tmp_path / "nodes.json", json.dumps(typed)),
                          write(tmp_path / "pods.json", json.dumps(generic))])
    assert [n.name for n in snap.nodes] == ["n1", "n2"] and len(snap.pods) == 1


def test_folder_recursive_and_gzip(tmp_path):
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub" / "n.yml", yaml.safe_dump(node("n1")))
    (tmp_path / "p.json.gz").write_bytes(gzip.compress(json.dumps(pod("a", node_name="n1")).encode()))
    write(tmp_path / "notes.txt", "not a dump")
    snap = load_snapshot([str(tmp_path)])
    assert len(snap.nodes) == 1 and len(snap.pods) == 1


def test_stdin(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(yaml.safe_dump(node("n1"))))
    assert load_snapshot(["-"]).nodes[0].name == "n1"


def test_services_and_controllers_are_read_not_skipped(tmp_path):
    """PodTopologySpread's default selector reads them: kept by kind, namespace and name."""
    docs = [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
             "spec": {"selector": {"app": "web", "tier": 1}}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db-external"},
             "spec": {"type": "ExternalName", "externalName": "db.example"}},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web-1", "namespace": "shop"},
             "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}}}},
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "shop"},
             "spec": {"selector": {"matchLabels": {"app": "db"}}}},
            {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "old"},
             "spec": {"template": {"metadata": {"labels": {"app": "old"}}}}},
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}}]
    snap = load_snapshot([write(tmp_path / "c.yaml", yaml.safe_dump_all(docs))])
    assert [(s.namespace, s.name, s.selector) for s in snap.services] == [
        ("shop", "web", {"app": "web", "tier": "1"}), ("default", "db-external", None)]
    assert {k: c.selector for k, c in snap.controllers.items()} == {
        ("ReplicaSet", "shop", "web-1"): {"matchLabels": {"app": "web"}},
        ("StatefulSet", "shop", "db"): {"matchLabels": {"app": "db"}},
        ("ReplicationController", "default", "old"): {"app": "old"}}  # defaulted from its template's labels
    assert not snap.skipped  # a Deployment is kept too, for check's rollouts
    assert [o["metadata"]["name"] for o in snap.objects["Deployment"]] == ["web"]


@pytest.mark.parametrize("text,message", [
    ("kind: Node\nmetadata: {name: [\n", "malformed YAML at line"),
    ("kind: Service\nmetadata: {name: web}\nspec: {selector: [app]}\n", "malformed Service: spec.selector must"),
    ("kind: ReplicaSet\nmetadata: {name: web}\nspec: {selector: app=web}\n", "malformed ReplicaSet: spec.selector"),
    ('{"kind": "Node", ', "malformed JSON at line 1"),
    ("- 1\n- 2\n", "not a Kubernetes object"),
    (yaml.safe_dump(node("n1", cpu="4x")), "invalid quantity"),
    (yaml.safe_dump(pod("a", node_name="n1", requests={"memory": "1Gb"})), "invalid quantity"),
    (yaml.safe_dump_all([node("n1"), node("n1", cpu="8")]), "two different objects named Node n1 .*bad.yaml and"),
])
def test_bad_input_names_the_file(tmp_path, text, message):
    path = write(tmp_path / "bad.yaml", text)
    with pytest.raises(InputError, match=message) as err:
        load_snapshot([path])
    assert "bad.yaml" in str(err.value)


def test_pending_pods_are_parsed_when_read_unless_a_replica_was(tmp_path):
    # A bound pod's bad quantity stops the load (above); a pending pod's only when its requests are
    # read (a question about another namespace never reads them). A pending pod whose container
    # matches one already parsed takes it as it is.
    docs = [node("n1"), pod("bound", node_name="n1", requests={"cpu": "500m", "memory": "1Gi"}),
            pod("twin", requests={"cpu": "500m", "memory": "1Gi"}), pod("broken", requests={"memory": "1Gb"})]
    snap = load_snapshot([write(tmp_path / "c.yaml", yaml.safe_dump_all(docs))])
    pods = {p.name: p for p in snap.pods}
    assert pods["twin"].containers[0] is pods["bound"].containers[0]
    assert pods["twin"].requests == {"cpu": 500, "memory": 2**30} and pods["twin"].host_ports == []
    with pytest.raises(InvalidQuantity, match="pod default/broken"):
        pods["broken"].requests


def test_missing_file():
    with pytest.raises(InputError, match="no such file"):
        load_snapshot(["/nonexistent/cluster.yaml"])


def test_priority_resolution_and_warnings(tmp_path):
    classes = [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
                "value": 1000},
               {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "dflt"},
                "value": 7, "globalDefault": True}]
    pods = [pod("explicit", spec={"priority": 5, "priorityClassName": "high"}),
            pod("by-class", spec={"priorityClassName": "high"}),
            pod("default"),
            pod("missing", spec={"priorityClassName": "nope"}),
            pod("orphan", node_name="gone")]
    snap = load_snapshot([write(tmp_path / "c.yaml", yaml.safe_dump_all(classes + pods))])
    assert {p.name: p.priority for p in snap.pods} == {"explicit": 5, "by-class": 1000, "default": 7,
                                                        "missing": 0, "orphan": 7}
    assert snap.warnings == {"PriorityClass 'nope' not found (priority 0 used)": 1,
                             "pod(s) bound to a node that is not in the snapshot": 1}
    assert snap.examples == {"PriorityClass 'nope' not found (priority 0 used)": ["default/missing"],
                             "pod(s) bound to a node that is not in the snapshot": ["default/orphan on gone"]}


def test_manifest_objects_replace_the_snapshots_of_the_same_name(tmp_path):
    from kplan.api.objects import Controller, Service
    docs = [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
             "spec": {"selector": {"app": "web"}}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": "shop"},
             "spec": {"selector": {"app": "db"}}},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web-1", "namespace": "shop"},
             "spec": {"selector": {"matchLabels": {"app": "web"}}}}]
    snap = load_snapshot([write(tmp_path / "c.yaml", yaml.safe_dump_all(docs))])
    new = snap.with_objects([Service("shop", "web", "", {"app": "web", "v": "2"})],
                            [Controller("ReplicaSet", "shop", "web-1", "", {"matchLabels": {"v": "2"}}),
                             Controller("StatefulSet", "shop", "web-1", "", None)])
    assert [(s.name, s.selector) for s in new.services] == [("db", {"app": "db"}), ("web", {"app": "web", "v": "2"})]
    assert {k: c.selector for k, c in new.controllers.items()} == {
        ("ReplicaSet", "shop", "web-1"): {"matchLabels": {"v": "2"}}, ("StatefulSet", "shop", "web-1"): None}
    assert len(snap.services) == 2 and len(snap.controllers) == 1  # the snapshot itself is left as it was
    assert snap.with_objects() is snap


def test_objects_read_twice_count_once_and_unused_kinds_never_conflict(tmp_path):
    a = [node("n1"), pod("a", node_name="n1"), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                                                 "data": {"v": "1"}}]
    b = [pod("a", node_name="n1"), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                                    "data": {"v": "2"}}]
    snap = load_snapshot([write(tmp_path / "a.yaml", yaml.safe_dump_all(a)),
                          write(tmp_path / "b.yaml", yaml.safe_dump_all(b))])
    assert len(snap.pods) == 1 and snap.skipped == {"ConfigMap (v1)": 1}
    assert snap.warnings == {"object(s) read twice, counted once": 1}
    (example,) = snap.examples["object(s) read twice, counted once"]
    assert example.startswith("Pod default/a (") and "a.yaml (document 2) and" in example


def test_a_list_whose_items_is_not_a_list_is_an_input_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"apiVersion": "v1", "kind": "List", "items": {"a": 1}}')
    with pytest.raises(InputError, match=r'List "": items: Invalid value: "object": items in body must be of '
                                         r'type array: "object"'):
        load_snapshot([str(bad)])


def test_nameless_objects_are_counted_named_and_left_out(tmp_path):
    """A Node without a name is no node "" to place pods on, nor to bind them to: it is left out, counted and
    named by where it was read, as are the other kinds kplan reads."""
    from run_kplan import run_kplan
    big = node("", cpu="64", memory="256Gi")
    del big["metadata"]["name"]
    nameless_pod = pod("x", node_name="small", requests={"cpu": "100m"})
    del nameless_pod["metadata"]["name"]
    pending = pod("waiting", requests={"cpu": "100m"})
    pending["spec"]["nodeName"] = ""  # bound to no node, not to the nameless one
    path = write(tmp_path / "c.yaml", yaml.safe_dump_all([big, node("small", cpu="200m"), nameless_pod, pending]))
    snap = load_snapshot([path])
    assert [n.name for n in snap.nodes] == ["small"] and [p.name for p in snap.pods] == ["waiting"]
    code, out, err = run_kplan("place", "samples/pod-burstable.yaml", "-f", path, "-o", "json")
    report = json.loads(out)
    assert code == 1 and report["placements"][0]["message"].startswith("0/1 nodes are available")
    assert err.splitlines() == [f"kplan: warning: 2 object(s) without metadata.name, left out: Node in {path}, "
                                f"Pod in {path} (document 3)"]


def test_unknown_taint_effects_are_warned_about_once_with_counts(tmp_path):
    from run_kplan import run_kplan
    nodes = [node(f"n{i}", taints=[{"key": "gpu", "value": "yes", "effect": effect}])
             for i, effect in enumerate(["NoScheduled", "NoSchedule", "Evict", "NoScheduled"])]
    path = write(tmp_path / "c.yaml", yaml.safe_dump_all(nodes))
    code, _, err = run_kplan("place", "samples/pod-burstable.yaml", "-f", path)
    assert code == 0 and err.splitlines() == [
        "kplan: warning: 3 taint(s) of an effect kube-scheduler does not know (not NoSchedule, PreferNoSchedule, "
        "NoExecute: no filter or score reads them): n0 gpu=yes:NoScheduled, n2 gpu=yes:Evict, n3 gpu=yes:NoScheduled"]
