"""`kplan nodes` shows node state as `kubectl get nodes` does: STATUS, taints, -L label columns,
the zone, and --group-by totals, in the table, -o wide and the JSON."""
import json
import re
from functools import partial

import pytest

from builders import node, pod
from run_kplan import run_kplan

kplan = partial(run_kplan, columns=250)
ZONE = "topology.kubernetes.io/zone"


def ready(raw, status):
    raw["status"]["conditions"] = [{"type": "MemoryPressure", "status": "False"},
                                   {"type": "Ready", "status": status}]
    return raw


@pytest.fixture
def states(tmp_path):
    """Nodes in every state kubectl's printNode tells apart."""
    nodes = [
        ready(node("ready", labels={ZONE: "zone-a", "pool": "web"}), "True"),
        ready(node("not-ready", labels={ZONE: "zone-a", "pool": "web"},
                   taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]), "False"),
        ready(node("lost", labels={ZONE: "zone-b"},
                   taints=[{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
                           {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}]), "Unknown"),
        node("no-conditions", labels={"pool": "db"}),
        ready(node("cordoned", labels={ZONE: "zone-b", "pool": "db"}, unschedulable=True,
                   taints=[{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
                           {"key": "dedicated", "value": "db", "effect": "NoSchedule"}]), "True"),
        ready(node("cordoned-down", unschedulable=True), "False"),
    ]
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    return str(path)


# kubectl's printNode: the Ready condition's type when True, "Not" + type otherwise (Unknown too),
# "Unknown" without the condition, then SchedulingDisabled for spec.unschedulable.
STATUS = {"ready": "Ready", "not-ready": "NotReady", "lost": "NotReady", "no-conditions": "Unknown",
          "cordoned": "Ready,SchedulingDisabled", "cordoned-down": "NotReady,SchedulingDisabled"}


def rows(out: str) -> dict[str, list[str]]:
    """Table rows by first cell, cells split at kubectl's 3-space gaps."""
    return {cells[0]: cells for cells in (re.split(r" {3,}", line) for line in out.splitlines() if line)}


def test_status_as_kubectl_get_nodes_prints_it(states):
    code, out, err = kplan("nodes", "-f", states, "-o", "json")
    assert code == 0, err
    nodes = {n["name"]: n for n in json.loads(out)["nodes"]}
    assert {name: n["status"] for name, n in nodes.items()} == STATUS
    code, out, _ = kplan("nodes", "-f", states)
    table = rows(out)
    assert table["NODE"][:4] == ["NODE", "STATUS", "ZONE", "TAINTS"]
    assert {name: cells[1] for name, cells in table.items() if name in STATUS} == STATUS


def test_a_what_if_cordon_shows_as_scheduling_disabled(states):
    code, out, _ = kplan("nodes", "-f", states, "--cordon", "ready", "-o", "json")
    assert next(n for n in json.loads(out)["nodes"] if n["name"] == "ready")["status"] == "Ready,SchedulingDisabled"


def test_taints_count_in_the_table_all_of_them_in_wide_and_json(states):
    _, out, _ = kplan("nodes", "-f", states)
    assert {name: cells[3] for name, cells in rows(out).items() if name in STATUS} == {
        "ready": "0", "not-ready": "1", "lost": "2", "no-conditions": "0", "cordoned": "2", "cordoned-down": "0"}
    _, out, _ = kplan("nodes", "-f", states, "-o", "wide")
    wide = rows(out)
    assert wide["cordoned"][3] == "node.kubernetes.io/unschedulable:NoSchedule, dedicated=db:NoSchedule"
    assert wide["lost"][3] == "node.kubernetes.io/unreachable:NoExecute, node.kubernetes.io/unreachable:NoSchedule"
    assert wide["ready"][3] == "<none>"
    _, out, _ = kplan("nodes", "-f", states, "-o", "json")
    cordoned = next(n for n in json.loads(out)["nodes"] if n["name"] == "cordoned")
    assert cordoned["taints"] == [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
                                  {"key": "dedicated", "value": "db", "effect": "NoSchedule"}]


def test_zone_column_by_default_only_when_nodes_carry_zones(states, tmp_path):
    _, out, _ = kplan("nodes", "-f", states)
    table = rows(out)
    assert {name: cells[2] for name, cells in table.items() if name in STATUS} == {
        "ready": "zone-a", "not-ready": "zone-a", "lost": "zone-b", "no-conditions": "<none>",
        "cordoned": "zone-b", "cordoned-down": "<none>"}
    _, out, _ = kplan("nodes", "-f", states, "-o", "json")
    # By name: cordoned, cordoned-down, lost, no-conditions, not-ready, ready.
    assert [n["zone"] for n in json.loads(out)["nodes"]] == ["zone-b", None, "zone-b", None, "zone-a", "zone-a"]
    zoneless = tmp_path / "zoneless.json"
    zoneless.write_text(json.dumps({"kind": "List", "apiVersion": "v1", "items": [node("n1"), node("n2")]}))
    _, out, _ = kplan("nodes", "-f", str(zoneless))
    assert rows(out)["NODE"][:4] == ["NODE", "STATUS", "TAINTS", "PODS"]


def test_label_columns_as_kubectl_get_L(states):
    # kubectl: the header is the key's last path segment in upper case; a node without the label
    # shows an empty cell; -L takes a comma-separated list and may be repeated.
    code, out, _ = kplan("nodes", "-f", states, "-L", "pool,kubernetes.io/hostname", "-L", "example.com/missing")
    assert code == 0
    header = rows(out)["NODE"]
    assert header[-3:] == ["POOL", "HOSTNAME", "MISSING"]
    assert "ZONE" in header
    lines = out.splitlines()
    start = {name: lines[0].index(name) for name in ("POOL", "HOSTNAME", "MISSING")}

    def cell(node_name, column):
        line = next(line for line in lines if line.startswith(node_name + " ")).ljust(len(lines[0]) + 20)
        return line[start[column]:].split("   ")[0].strip()
    assert [cell("cordoned", c) for c in ("POOL", "HOSTNAME", "MISSING")] == ["db", "cordoned", ""]
    assert [cell("lost", c) for c in ("POOL", "HOSTNAME", "MISSING")] == ["", "lost", ""]
    _, out, _ = kplan("nodes", "-f", states, "-L", "pool", "-o", "json")
    report = json.loads(out)
    assert report["labelColumns"] == ["pool"]
    assert {n["name"]: n["labels"] for n in report["nodes"]}["lost"] == {"pool": None}
    # -L with the zone label: no second zone column.
    _, out, _ = kplan("nodes", "-f", states, "-L", ZONE)
    assert rows(out)["NODE"].count("ZONE") == 1


@pytest.fixture
def loaded(tmp_path):
    """Two zones and a node without one; requests and limits per node known by hand."""
    nodes = [node("a1", cpu="4", memory="8Gi", labels={ZONE: "zone-a"}),
             node("a2", cpu="8", memory="16Gi", labels={ZONE: "zone-a"}),
             node("b1", cpu="4", memory="8Gi", labels={ZONE: "zone-b"}),
             node("x1", cpu="2", memory="4Gi")]
    pods = [pod("p1", node_name="a1", requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "2", "memory": "2Gi"}),
            pod("p2", node_name="a2", requests={"cpu": "500m", "memory": "3Gi"}),
            pod("p3", node_name="b1", requests={"cpu": "3", "memory": "2Gi"}),
            pod("p4", node_name="x1", requests={"cpu": "250m", "memory": "512Mi"})]
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes + pods}))
    return str(path)


def test_group_by_zone_sums_each_zone(loaded):
    code, out, err = kplan("nodes", "-f", loaded, "--group-by", "zone", "-o", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["groupBy"] == ZONE
    groups = {g["name"]: g for g in report["groups"]}
    assert list(groups) == ["zone-a", "zone-b", "<none>"]  # by name, nodes without the label last
    a = groups["zone-a"]
    # zone-a: a1 (4 cpu, 8Gi) + a2 (8 cpu, 16Gi); requests 1 + 0.5 cpu, 1Gi + 3Gi; limits 2 + 0.5 cpu
    # (a2's pod sets none: its request counts), 2Gi + 3Gi.
    assert (a["nodes"], a["pods"]) == (2, 2)
    assert a["allocatable"] == {"cpu": "12", "memory": "24Gi"}
    assert a["requests"] == {"cpu": "1500m", "memory": "4Gi"}
    assert a["limits"] == {"cpu": "2500m", "memory": "5Gi"}
    assert a["ratios"]["cpu"] == {"request": 0.125, "limit": 0.2083}
    assert (groups["<none>"]["nodes"], groups["<none>"]["requests"]["cpu"]) == (1, "250m")
    assert sum(g["nodes"] for g in report["groups"]) == report["totals"]["nodes"] == 4
    code, out, _ = kplan("nodes", "-f", loaded, "--group-by", "zone")
    table = rows(out)
    assert table["ZONE"][:4] == ["ZONE", "NODES", "PODS", "QOS G/B/BE"]
    assert table["zone-a"][:7] == ["zone-a", "2", "2", "0/2/0", "12", "1.5 (12%)", "2.5 (21%)"]
    assert table["zone-a"][7:] == ["24Gi", "4Gi (17%)", "5Gi (21%)"]
    assert table["*"][:2] == ["*", "4"]


def test_group_by_any_label_and_bad_keys(loaded, states):
    code, out, _ = kplan("nodes", "-f", states, "--group-by", "pool", "-o", "json")
    assert code == 0
    assert [(g["name"], g["nodes"]) for g in json.loads(out)["groups"]] == [
        ("db", 2), ("web", 2), ("<none>", 2)]
    _, out, _ = kplan("nodes", "-f", states, "--group-by", "pool")
    assert rows(out)["POOL"][:2] == ["POOL", "NODES"]
    code, _, err = kplan("nodes", "-f", loaded, "--group-by", "not a key")
    assert code == 2 and "--group-by" in err and "Traceback" not in err
    code, _, err = kplan("nodes", "-f", loaded, "--group-by", "zone", "--usage")
    assert code == 2 and "--group-by does not go with --usage" in err


def test_group_by_after_a_run_sums_before_and_after(loaded, tmp_path):
    incoming = tmp_path / "pod.json"
    incoming.write_text(json.dumps(pod("new", requests={"cpu": "1", "memory": "1Gi"},
                                       spec={"nodeSelector": {ZONE: "zone-b"}})))
    code, out, err = kplan("nodes", "-f", loaded, "--after", str(incoming), "--group-by", "zone", "-o", "json")
    assert code == 0, err
    b = next(g for g in json.loads(out)["groups"] if g["name"] == "zone-b")
    assert (b["pods"], b["podsAfter"]) == (1, 2)
    assert (b["requests"]["cpu"], b["requestsAfter"]["cpu"]) == ("3", "4")
    assert (b["ratios"]["cpu"]["request"], b["ratios"]["cpu"]["requestAfter"]) == (0.75, 1.0)


def test_a_warning_of_many_nodes_is_one_line(tmp_path):
    bad = {"node.koordinator.sh/limit-to-allocatable": "not json"}
    nodes = [node(f"n{k}", annotations=bad) for k in range(5)]
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    code, out, err = kplan("nodes", "-f", str(path), "-o", "json")
    assert code == 0
    (line,) = [line for line in err.splitlines() if "warning" in line]
    assert line.startswith("kplan: warning: 5 nodes (n0, n1, n2, … (2 more; -v lists all)): invalid "
                           "node.koordinator.sh/limit-to-allocatable annotation")
    assert all(n["warnings"] for n in json.loads(out)["nodes"])  # the JSON keeps them per node
    _, _, err = kplan("nodes", "-f", str(path), "-o", "json", "-v")
    assert "kplan: warning: 5 nodes (n0, n1, n2, n3, n4): invalid" in err
