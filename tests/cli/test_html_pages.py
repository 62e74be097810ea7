"""`--html FILE` on place, pending, check, capacity and nodes: the page holds what the JSON report says.

Each test runs kplan as users do and reads the page back with html_page.parse; expectations come
from the same run's `-o json` report or, where stated, from the sample files by hand.
"""
import json
from collections import Counter
from functools import partial
from pathlib import Path

import pytest
import yaml

from html_page import parse
from run_kplan import run_kplan

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = "samples/cluster.yaml"
PLACE = ("place", "samples/pod-burstable.yaml", "samples/pod-too-big.yaml", "-f", CLUSTER)


kplan = partial(run_kplan, columns=120)


def page_and_report(tmp_path, *args, name="page.html"):
    """Runs the command once with --html and -o json: (parsed page, page text, JSON report, exit code)."""
    path = tmp_path / name
    code, out, err = kplan(*args, "-o", "json", "--html", str(path))
    assert code in (0, 1), err
    text = path.read_text(encoding="utf-8")
    return parse(text), text, json.loads(out), code


def heatmap_rows(details):
    table = details.find("table", cls="heat")
    return {tr.attrs["data-node"]: tr for tr in table.find_all("tr", data_node=None)}


def test_place_page_shows_every_pod_score_and_rejection(tmp_path):
    page, text, report, code = page_and_report(tmp_path, *PLACE)
    assert code == 1  # the second pod fits nowhere
    rows = {tr.attrs["data-pod"]: tr for tr in page.find("table", cls="pods").find_all("tr", data_pod=None)}
    assert list(rows) == [p["pod"] for p in report["placements"]]
    for k, p in enumerate(report["placements"]):
        assert p["outcome"] in rows[p["pod"]].find("span", cls="badge").text()
        details = page.find("details", id=f"pod-{k}")
        feasible = [n for n in p["nodes"] if n["feasible"]]
        if feasible:
            heat = heatmap_rows(details)
            assert list(heat) == [n["name"] for n in feasible]  # ranked
            columns = [th.attrs["data-plugin"] for th in details.find_all("th", cls="plugin")]
            for n in feasible:
                cells = [td.attrs["data-v"] for td in heat[n["name"]].find_all("td", cls="h")]
                assert {p: int(v) for p, v in zip(columns, cells) if v} == n["scores"]
                # Colour steps of ten points (viridis, the stylesheet's s0..s10).
                assert [td.attrs["class"] for td in heat[n["name"]].find_all("td", cls="h") if td.attrs["data-v"]] \
                    == [f"h s{n['scores'][p] // 10}" for p in columns if p in n["scores"]]
                assert int(heat[n["name"]].find("td", cls="total").attrs["data-v"]) == n["totalScore"]
            headers = [th.text() for th in details.find_all("th", cls="plugin")]
            assert headers == [f"{plugin} ×{p['weights'][plugin]}" for plugin in p["weights"]
                               if any(plugin in n["scores"] for n in feasible)]
        # One bar per plugin and reason, counted as the FailedScheduling message counts nodes.
        expected = Counter((n["plugin"], reason) for n in p["nodes"] if not n["feasible"] for reason in n["reasons"])
        bars = {tr.find("th").text(): int(tr.find("td").text()) for tr in details.find("table", cls="chart").find_all("tr")}
        assert bars == {f"{plugin}: {reason}": count for (plugin, reason), count in expected.items()}
        if p["message"]:
            assert details.find("pre", cls="message").text() == p["message"]
    # Hand-checked from samples/cluster.yaml: 4 nodes lack the 12 cpu and 100Gi the second pod asks for.
    assert bars["NodeResourcesFit: Insufficient cpu"] == 4 and bars["NodeResourcesFit: Insufficient memory"] == 4


def test_place_page_nodes_before_and_after_match_the_node_report(tmp_path):
    page, _, _, _ = page_and_report(tmp_path, *PLACE)
    code, out, err = kplan("nodes", "-f", CLUSTER, "--after", "samples/pod-burstable.yaml",
                           "--after", "samples/pod-too-big.yaml", "-o", "json")
    assert code == 1, err
    node_report = json.loads(out)
    table = page.find("table", cls="nodes")
    rows = {tr.attrs["data-node"]: tr for tr in table.find_all("tr", data_node=None)}
    assert sorted(rows) == sorted(n["name"] for n in node_report["nodes"])
    for n in node_report["nodes"]:
        for resource in ("cpu", "memory"):
            cell = rows[n["name"]].find("td", data_resource=resource)
            assert float(cell.attrs["data-v"]) == n["ratios"][resource]["requestAfter"]
            assert float(cell.attrs["data-limit"]) == n["ratios"][resource]["limitAfter"]
    # shop/web-new landed on node-c1: its row shows the pods before -> after and the added requests.
    assert rows["node-c1"].find("td", cls="num").text() == f"{2}→{3}"
    assert rows["node-c1"].find_all("rect", cls="added")


def test_nodes_page_ratios_and_over_commit(tmp_path):
    page, _, report, _ = page_and_report(tmp_path, "nodes", "-f", "samples/limitaware/story-cluster.yaml")
    rows = {tr.attrs["data-node"]: tr for tr in page.find("table", cls="nodes").find_all("tr", data_node=None)}
    for n in report["nodes"]:
        cell = rows[n["name"]].find("td", data_resource="cpu")
        assert float(cell.attrs["data-v"]) == n["ratios"]["cpu"]["request"]
        assert float(cell.attrs["data-limit"]) == n["ratios"]["cpu"]["limit"]
    # By hand from the story: node1's cpu limits are 10 of 8 (125%): 25 units beyond the 100% mark
    # in the warning colour; node2's 5 of 8 stay under it.
    node1 = rows["node1"].find("td", data_resource="cpu")
    assert [r.attrs["width"] for r in node1.find_all("rect", cls="over")] == ["25.0"]
    assert not rows["node2"].find("td", data_resource="cpu").find_all("rect", cls="over")
    assert "50% / 125%" in node1.text()


def test_nodes_page_zones_sum_their_nodes(tmp_path):
    page, _, report, _ = page_and_report(tmp_path, "nodes", "-f", CLUSTER)
    zones = {tr.find("td").text(): tr for tr in page.find("table", cls="zones").find("tbody").find_all("tr")}
    # samples/cluster.yaml: two nodes in each of zone-a, zone-b and zone-c.
    assert {zone: int(tr.find_all("td")[1].text()) for zone, tr in zones.items()} == \
        {"zone-a": 2, "zone-b": 2, "zone-c": 2}
    assert sum(int(tr.find_all("td")[2].text()) for tr in zones.values()) == report["totals"]["pods"]


def test_pending_page(tmp_path):
    page, _, report, _ = page_and_report(tmp_path, "pending", "-f", "samples/pending/cluster.yaml", "-A")
    rows = page.find("table", cls="pods").find_all("tr", data_pod=None)
    # The pods that would not be placed (train-1, worker-3) first, then the others, in queue order.
    order = ["batch/train-1", "shop/worker-3", "shop/api-7", "batch/report-1"]
    assert [tr.attrs["data-pod"] for tr in rows] == order and sorted(order) == sorted(p["pod"] for p in report["pods"])
    by_pod = {p["pod"]: p for p in report["pods"]}
    for k, pod in enumerate(order):
        p, details = by_pod[pod], page.find("details", id=f"pod-{k}")
        assert details.find("summary").text().startswith(pod + " ")
        for near in p["nearest"]:
            assert near["node"] in [tr.find("td").text() for tr in details.find("table", cls="nearest").find("tbody").find_all("tr")]
        for hint in p["hints"]:
            assert hint in [li.text() for li in details.find_all("li")]
        if p["gated"]:
            assert all(gate in details.text() for gate in p["gates"])
    for other in report["otherScheduler"]:
        assert other["pod"] in page.text()


def test_check_page_and_its_preview_leave_the_run_unchanged(tmp_path):
    args = ("check", "samples/check/apps.yaml", "samples/check/too-big.yaml", "-f", CLUSTER)
    page, _, report, _ = page_and_report(tmp_path, *args)
    code, plain, _ = kplan(*args, "-o", "json")
    assert json.loads(plain) == report  # drawing each workload's first pod changes nothing
    table = page.find("table", cls="workloads")
    rows = table.find("tbody").find_all("tr")
    assert len(rows) == len(report["workloads"])
    for tr, w in zip(rows, report["workloads"]):
        assert tr.find("a").text() == f"{w['kind']}/{w['namespace']}/{w['name']}"
        assert f"{w['placed']} / {w['needsPreemption']} / {w['unschedulable']}" in tr.text()
    first = page.find("details", id="workload-0")
    first_pod = report["placements"][0]
    assert first_pod["node"] in heatmap_rows(first)  # its node is among the ranked feasible nodes
    assert heatmap_rows(first)[first_pod["node"]].attrs.get("class") == "selected"
    pods = page.find("table", cls="pods").find_all("tr", data_pod=None)
    assert [tr.attrs["data-pod"] for tr in pods] == [p["pod"] for p in report["placements"]]


def test_capacity_page(tmp_path):
    page, _, report, _ = page_and_report(tmp_path, "capacity", "samples/pod-burstable.yaml", "-f", CLUSTER)
    charts = page.find_all("table", cls="chart")
    drawn = [{tr.find("th").text(): int(tr.find("td").text()) for tr in chart.find_all("tr")} for chart in charts]
    assert report["perZone"] in drawn and report["perNode"] in drawn
    assert page.find("pre", cls="message").text() == report["stopReason"]


def test_capacity_page_charts_the_victims_per_priority(tmp_path):
    # samples/capacity by hand (see tests/cli/test_capacity_preemption_cli.py): shop/web-1 (priority 0) and
    # batch/etl-2, etl-1 and report-1 (priority 100, class batch) are evicted.
    args = ("capacity", "samples/capacity/checkout.yaml", "-f", "samples/capacity/cluster.yaml")
    page, _, report, _ = page_and_report(tmp_path, *args, "--allow-preemption")
    section = page.find("section", id="victims")
    by_priority, by_namespace = section.find_all("table", cls="chart")
    assert [(tr.find("th").text(), int(tr.find("td").text())) for tr in by_priority.find_all("tr")] == [
        ("priority 0", 1), ("priority 100 (batch)", 3)]
    assert {tr.find("th").text(): int(tr.find("td").text()) for tr in by_namespace.find_all("tr")} == {
        "batch": 3, "shop": 1}
    evicted = section.find("table", cls="victims").find("tbody").find_all("tr")
    assert [tr.find("td").text() for tr in evicted] == ["shop/web-1", "batch/etl-2", "batch/etl-1", "batch/report-1"]
    tiles = {li.find("b").text(): li.text() for li in page.find("ul", cls="tiles").find_all("li")}
    assert tiles["8"].endswith("replicas") and tiles["5"].endswith("by preemption") and tiles["4"].endswith("evicted")
    assert page.first("section", id="next-victims") is None and report["replicas"] == 8
    page, _, report, _ = page_and_report(tmp_path, *args, name="without.html")
    assert page.first("section", id="victims") is None
    (chart, _) = page.find("section", id="next-victims").find_all("table", cls="chart")
    assert [(tr.find("th").text(), int(tr.find("td").text())) for tr in chart.find_all("tr")] == [("priority 0", 1)]


def test_check_page_charts_each_workloads_victims(tmp_path):
    manifest = tmp_path / "checkout.yaml"
    manifest.write_text((ROOT / "samples/capacity/checkout.yaml").read_text().replace("replicas: 1", "replicas: 5"))
    page, _, report, _ = page_and_report(tmp_path, "check", str(manifest), "-f", "samples/capacity/cluster.yaml",
                                         "--allow-preemption")
    (w,) = report["workloads"]
    assert w["victims"]["pods"] == 2  # the 4th replica evicts shop/web-1, the 5th batch/etl-2
    details = page.find("details", id="workload-0")
    by_priority = details.find_all("table", cls="chart")[1]  # after the pods per node
    assert [(tr.find("th").text(), int(tr.find("td").text())) for tr in by_priority.find_all("tr")] == [
        ("priority 0", 1), ("priority 100 (batch)", 1)]


def test_preemption_victims_on_the_page(tmp_path):
    story = "samples/quota/story1/"
    page, _, report, _ = page_and_report(
        tmp_path, "place", "--config", "samples/quota/scheduler-config.yaml", "-f", story + "cluster.yaml",
        story + "a-3-gpus.yaml", story + "a-2-gpus.yaml", story + "b-3-gpus.yaml", story + "b-1-gpu.yaml")
    (k, entry), = [(k, p) for k, p in enumerate(report["placements"]) if p["preemption"]]
    victims = page.find("details", id=f"pod-{k}").find("table", cls="victims")
    assert [tr.find("td").text() for tr in victims.find("tbody").find_all("tr")] == entry["preemption"]["victims"]


def test_page_is_self_contained_and_deterministic(tmp_path):
    first, text, report, _ = page_and_report(tmp_path, *PLACE, name="a.html")
    _, again, _, _ = page_and_report(tmp_path, *PLACE, name="b.html")
    assert text == again
    assert not first.find_all("link") and not [s for s in first.find_all("script") if "src" in s.attrs]
    assert "http://" not in text and "https://" not in text
    facts = dict(zip((dt.text() for dt in first.find_all("dt")), (dd.text() for dd in first.find_all("dd"))))
    assert facts["Snapshot"] == CLUSTER
    assert facts["kube-scheduler"].startswith(report["kubeVersion"])
    assert facts["Not simulated"] == (", ".join(report["placements"][0]["notSimulated"]) or "none")


@pytest.mark.parametrize("args", [
    PLACE, ("nodes", "-f", CLUSTER), ("capacity", "samples/pod-burstable.yaml", "-f", CLUSTER),
    ("pending", "-f", "samples/pending/cluster.yaml", "-A"),
    ("check", "samples/check/apps.yaml", "-f", CLUSTER),
])
def test_unwritable_page_is_an_input_error(tmp_path, args):
    target = tmp_path / "missing" / "report.html"
    code, out, err = kplan(*args, "--html", str(target))
    assert code == 2
    assert err.strip().count("\n") == 0 and str(target) in err and "cannot write" in err


def test_html_does_not_go_with_usage(tmp_path):
    code, _, err = kplan("nodes", "-f", "samples/loadaware/cluster.yaml", "--usage", "--html", str(tmp_path / "x.html"))
    assert code == 2 and "--usage" in err


def test_heatmap_draws_the_best_50_nodes_and_sums_up_the_others():
    from kplan.report.html.placement import placement_view
    nodes = [{"name": f"n{k:02}", "feasible": True, "rank": k + 1, "totalScore": 300 - k,
              "scores": {"A": 100 - k, "B": 50}} for k in range(60)]
    view = placement_view({"pod": "ns/p", "outcome": "Scheduled", "node": "n00", "weights": {"A": 2, "B": 1, "C": 1},
                           "nodes": nodes}, "pod-0")
    assert [row["name"] for row in view["heatmap"]] == [f"n{k:02}" for k in range(50)]
    assert [p["name"] for p in view["plugins"]] == ["A", "B"]  # C scored no node: no column
    # Nodes 50..59: A scores 50 down to 41, B 50 everywhere, totals 250 down to 241.
    assert view["rest"] == {"count": 10, "plugins": ["41–50", "50"], "total": "241–250"}


def test_pending_heatmap_ranks_the_feasible_nodes_as_place_does(tmp_path):
    # The pending report keeps each pod's selected node only; its page ranks the best nodes, as
    # `kplan place` of the same pod on the same cluster does.
    pending_pod = yaml.safe_load((ROOT / "samples/pod-burstable.yaml").read_text())
    pending_pod["status"] = {"phase": "Pending"}
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text((ROOT / CLUSTER).read_text() + "\n---\n" + yaml.safe_dump(pending_pod))
    page, _, report, _ = page_and_report(tmp_path, "pending", "-f", str(cluster), "-A")
    code, out, err = kplan("place", "samples/pod-burstable.yaml", "-f", CLUSTER, "-o", "json")
    assert code == 0, err
    (placed,) = json.loads(out)["placements"]
    feasible = [n for n in placed["nodes"] if n["feasible"]]
    assert len(feasible) > 1
    heat = heatmap_rows(page.find("details", id="pod-0"))
    assert list(heat) == [n["name"] for n in feasible]
    for n in feasible:
        assert int(heat[n["name"]].find("td", cls="total").attrs["data-v"]) == n["totalScore"]
    (pod,) = report["pods"]
    assert [n["name"] for n in pod["placement"]["nodes"]] == [placed["node"]]  # the JSON keeps one node
    code, plain, _ = kplan("pending", "-f", str(cluster), "-A", "-o", "json")
    assert json.loads(plain) == report


def test_only_pods_drawn_in_full_link_to_their_details():
    from kplan.report.html.placement import pod_rows
    entries = [{"pod": f"ns/p{k}", "outcome": "Scheduled", "node": "n"} for k in range(3)]
    assert [row["anchor"] for row in pod_rows(entries, detailed=2)] == ["pod-0", "pod-1", ""]


def test_names_are_escaped_in_the_node_table(tmp_path):
    # A snapshot is not validated as manifests are: a node name may hold markup characters.
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("""apiVersion: v1
kind: Node
metadata:
  name: 'a"<evil>&c'
  labels: {topology.kubernetes.io/zone: "<z>", team: "<zz>x</zz>"}
spec:
  taints: [{key: k, value: "<t>", effect: NoSchedule}]
status:
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
""")
    page, _, report, _ = page_and_report(tmp_path, "nodes", "-f", str(cluster), "-L", "team")
    (row,) = page.find("table", cls="nodes").find_all("tr", data_node=None)
    assert row.attrs["data-node"] == 'a"<evil>&c' and row.attrs["data-zone"] == "<z>"
    cells = [td.text() for td in row.find_all("td")]
    assert cells[:4] == ['a"<evil>&c', "Unknown", "<z>", "k=<t>:NoSchedule"] and cells[-1] == "<zz>x</zz>"
    assert not page.find_all("evil") and not page.find_all("z") and not page.find_all("t") and not page.find_all("zz")


def test_pages_of_many_pods_draw_fewer_ranked_nodes_per_pod():
    from kplan.report.html.placement import heatmap_rows
    # 2,000 ranked-node rows over the page, 50 at most and 10 at least per pod.
    assert [heatmap_rows(n) for n in (1, 40, 41, 100, 200, 1000)] == [50, 50, 48, 20, 10, 10]


def header_facts(page):
    return dict(zip((dt.text() for dt in page.find_all("dt")), (dd.text() for dd in page.find_all("dd"))))


def test_header_names_the_profiles_the_run_used(tmp_path):
    config = tmp_path / "two-profiles.yaml"
    config.write_text("""apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: packed
  plugins:
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
""")
    both, _, _, _ = page_and_report(tmp_path, *PLACE, "--config", str(config), name="both.html")
    assert header_facts(both)["Profile"] == "default-scheduler, packed"
    one, _, report, _ = page_and_report(tmp_path, *PLACE, "--config", str(config), "--profile", "packed",
                                        name="one.html")
    facts = header_facts(one)
    assert facts["Profile"] == "packed"
    assert facts["Not simulated"] == (", ".join(report["placements"][0]["notSimulated"]) or "none")


def test_compare_header_names_each_variants_profile_and_what_it_does_not_simulate(tmp_path):
    page, _, report, _ = page_and_report(
        tmp_path, "compare", "samples/compare/web.yaml", "-f", CLUSTER,
        "--config", "samples/compare/least-allocated.yaml", "--config", "samples/compare/most-allocated.yaml")
    code, out, _ = kplan("place", "samples/pod-burstable.yaml", "-f", CLUSTER, "-o", "json")
    not_simulated = ", ".join(json.loads(out)["placements"][0]["notSimulated"]) or "none"  # as the defaults'
    facts = header_facts(page)
    for v in report["variants"]:
        assert facts[f"Variant {v['name']}"].endswith(f"profile default-scheduler, not simulated: {not_simulated}")


def test_nodes_histogram_counts_nodes_per_tenth_of_allocatable(tmp_path):
    page, _, report, _ = page_and_report(tmp_path, "nodes", "-f", CLUSTER)
    charts = {chart.find("caption").text().split(":")[0]: chart for chart in page.find_all("table", cls="chart")}
    for resource in ("cpu", "memory"):
        # Tenths of allocatable: 0.45 is in 40–50%, exactly 1.0 still in 90–100%, above it "over 100%".
        expected = Counter("over 100%" if r > 1 else f"{min(int(r * 10), 9) * 10}–{min(int(r * 10), 9) * 10 + 10}%"
                           for r in (n["ratios"][resource]["request"] for n in report["nodes"]))
        drawn = {tr.find("th").text(): int(tr.find("td").text()) for tr in charts[resource].find_all("tr")}
        assert {label: count for label, count in drawn.items() if count} == dict(expected)
        assert sum(drawn.values()) == len(report["nodes"]) and len(drawn) == 11


def test_nodes_page_shows_state_readable_quantities_and_groups(tmp_path):
    page, _, report, _ = page_and_report(tmp_path, "nodes", "-f", CLUSTER, "--cordon", "node-b1",
                                         "-L", "pool", "--group-by", "pool")
    rows = {tr.attrs["data-node"]: tr for tr in page.find("table", cls="nodes").find_all("tr", data_node=None)}
    status = {name: tr.find("td", cls="status").text() for name, tr in rows.items()}
    assert status == {n["name"]: n["status"] for n in report["nodes"]}
    assert status["node-b1"] == "Ready,SchedulingDisabled" and status["node-a1"] == "Ready"
    assert rows["gpu-a1"].find("td", cls="taints").text() == "nvidia.com/gpu=present:NoSchedule"
    # samples/cluster.yaml: node-a1 3920m cpu and 15Gi, gpu-a1 7910m and 60Gi: one unit per resource.
    assert [td.text() for td in rows["node-a1"].find_all("td", cls="num")] == ["3", "3.92 cores", "15Gi"]
    assert [td.text() for td in rows["gpu-a1"].find_all("td", cls="num")] == ["2", "7.91 cores", "60Gi"]
    assert rows["node-a1"].find_all("td")[-1].text() == "general"  # the -L column
    groups = {tr.attrs["data-group"]: tr for tr in page.find("table", cls="groups").find("tbody").find_all("tr")}
    assert list(groups) == ["general", "gpu", "memory"] == [g["name"] for g in report["groups"]]
    general = groups["general"].find_all("td")
    # pool=general: node-a1, node-b1, node-b2, node-c1, 3920m each (15.68 cores), 60Gi; 9 pods.
    assert [general[k].text() for k in (0, 1, 2)] == ["general", "4", "9"]
    assert [td.text() for td in groups["general"].find_all("td", cls="num")][2:] == ["15.68 cores", "60Gi"]


def test_pending_page_draws_pods_that_would_not_be_placed_first(tmp_path):
    # 203 pods pending on one big node, in queue order by creation; the last one asks more than the node
    # has. The page draws 200 pods in full: the unschedulable one first, though last in the queue.
    items = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
              "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "500"}}}]
    for k in range(203):
        cpu = "100" if k == 202 else "100m"
        items.append({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"name": f"p-{k:03}", "namespace": "default",
                                   "creationTimestamp": f"2026-01-01T00:{k // 60:02}:{k % 60:02}Z"},
                      "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}]},
                      "status": {"phase": "Pending"}})
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    page, _, report, code = page_and_report(tmp_path, "pending", "-f", str(cluster))
    assert code == 1 and report["pods"][-1]["pod"] == "default/p-202"
    table_rows = page.find("table", cls="pods").find("tbody").find_all("tr")
    assert table_rows[0].attrs["data-pod"] == "default/p-202"
    assert [td.text() for td in table_rows[0].find_all("td")][3] == "203"  # its place in the queue
    assert [tr.attrs["data-pod"] for tr in table_rows[1:]] == [f"default/p-{k:03}" for k in range(202)]
    details = page.find_all("details", cls="pod")
    assert len(details) == 200 and details[0].find("summary").text().startswith("default/p-202 ")
    assert "Nearest nodes" in details[0].text() or "What would make it fit" in details[0].text()
