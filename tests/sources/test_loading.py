"""Reading dumps: formats kubectl writes, folders, stdin, gzip, and bad input."""
import gzip
import io
import json

import pytest
import yaml

from builders import node, pod
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


@pytest.mark.parametrize("text,message", [
    ("kind: Node\nmetadata: {name: [\n", "malformed YAML at line"),
    ('{"kind": "Node", ', "malformed JSON at line 1"),
    ("- 1\n- 2\n", "not a Kubernetes object"),
    (yaml.safe_dump(node("n1", cpu="4x")), "invalid quantity"),
    (yaml.safe_dump(pod("a", node_name="n1", requests={"memory": "1Gb"})), "invalid quantity"),
    (yaml.safe_dump_all([node("n1"), node("n1")]), "duplicate node name 'n1'"),
])
def test_bad_input_names_the_file(tmp_path, text, message):
    path = write(tmp_path / "bad.yaml", text)
    with pytest.raises(InputError, match=message) as err:
        load_snapshot([path])
    assert "bad.yaml" in str(err.value)


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
