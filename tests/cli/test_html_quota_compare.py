"""`kplan quota status --html`, the quota section of the place, check and capacity pages, and `kplan compare --html`,
through the real entry point; the pages' numbers are checked against the commands' -o json."""
import json
from functools import partial

import pytest

from kplan.api.resources import amount
from html_page import parse
from run_kplan import run_kplan

CONFIG = "samples/quota/scheduler-config.yaml"
STORY1 = "samples/quota/story1"
COMPARE = ("compare", "samples/compare/web.yaml", "-f", "samples/cluster.yaml",
           "--config", "samples/compare/least-allocated.yaml", "--config", "samples/compare/most-allocated.yaml")

# One quota over cpu, memory and a GPU without a max; its pod borrows cpu (1 used over a min of 500m).
TEAM = """apiVersion: v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "110", nvidia.com/gpu: "2"}
---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: ElasticQuota
metadata: {name: team, namespace: team}
spec:
  min: {cpu: 500m, memory: 8Gi, nvidia.com/gpu: 1}
  max: {cpu: "2", memory: 88Gi}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: team}
spec:
  nodeName: n1
  containers:
  - name: c
    image: app
    resources:
      requests: {cpu: "1", memory: 1Gi}
status: {phase: Running}
"""


kplan = partial(run_kplan, columns=160)


def page(*args, path):
    code, out, err = kplan(*args, "--html", str(path))
    assert path.exists(), err
    return code, out, parse(path.read_text(encoding="utf-8"))


def quota_json(*args):
    code, out, err = kplan("quota", "status", *args, "-A", "-o", "json")
    assert code == 0, err
    return json.loads(out)


def test_quota_page_shows_every_quota_and_resource_with_the_reports_numbers(tmp_path):
    cluster = tmp_path / "team.yaml"
    cluster.write_text(TEAM)
    for snapshot in (str(cluster), f"{STORY1}/cluster.yaml"):
        report = quota_json("-f", snapshot)
        code, _, root = page("quota", "status", "-f", snapshot, "-A", "-o", "json", path=tmp_path / "q.html")
        assert code == 0
        assert report["quotas"]
        for q in report["quotas"]:
            key = f"{q['namespace']}/{q['name']}"
            for resource in q["used"]:
                (row,) = root.find_all("tr", data_quota=key, data_resource=resource)
                cells = row.find_all("td", cls="num")
                for field, cell in zip(("min", "max", "used", "borrowed", "lendable"), cells):
                    assert row.attrs[f"data-{field}"] == q[field][resource]  # exact, as in the JSON
                    exact = q[field][resource]
                    assert cell.attrs["data-v"] == ("Infinity" if exact == "unlimited" else str(amount(resource, exact)))
            assert len(root.find_all("tr", data_quota=key)) == len(q["used"])
        for resource, capacity in report["cluster"]["capacity"].items():
            (row,) = root.find_all("tr", data_resource=resource, data_capacity=capacity)
            assert row.attrs["data-total-min"] == report["cluster"]["totalMin"][resource]
            assert row.attrs["data-total-used"] == report["cluster"]["totalUsed"][resource]
        text = " ".join(root.text(" ").split())
        assert report["warnings"] and all(" ".join(w.split()) in text for w in report["warnings"])


def test_quota_page_writes_quantities_as_people_read_them(tmp_path):
    cluster = tmp_path / "team.yaml"
    cluster.write_text(TEAM)
    _, _, root = page("quota", "status", "-f", str(cluster), "-n", "team", path=tmp_path / "q.html")

    def shown(resource):
        (row,) = root.find_all("tr", data_quota="team/team", data_resource=resource)
        return [td.text() for td in row.find_all("td", cls="num")][:5], row.find("title").text()
    # min, max, used, borrowed, lendable: one unit per resource (cores, Gi), not 500m beside 2.
    assert shown("cpu") == (["0.5 cores", "2 cores", "1 core", "0.5 cores", "0"],
                            "cpu: used 1 core of min 0.5 cores, max 2 cores; borrowed 0.5 cores, lendable 0")
    assert shown("memory")[0] == ["8Gi", "88Gi", "1Gi", "0", "7Gi"]
    assert shown("nvidia.com/gpu")[0] == ["1", "unlimited", "0", "0", "1"]
    (cpu,) = root.find_all("tr", data_resource="cpu", data_capacity="4")
    assert [td.text() for td in cpu.find_all("td", cls="num")] == ["4 cores", "0.5 cores", "1 core"]


def test_quota_bars_stack_used_borrowed_lendable_and_outline_a_finite_max(tmp_path):
    cluster = tmp_path / "team.yaml"
    cluster.write_text(TEAM)
    _, _, root = page("quota", "status", "-f", str(cluster), "-n", "team", path=tmp_path / "q.html")

    def parts(resource):
        (row,) = root.find_all("tr", data_quota="team/team", data_resource=resource)
        (svg,) = row.find_all("svg")
        return {r.attrs["class"] for r in svg.find_all("rect")}
    assert parts("cpu") == {"track", "used", "borrowed", "max"}  # 1 used over a min of 500m, max 2
    assert parts("memory") == {"track", "used", "lendable", "max"}  # 1Gi used of a min of 8Gi
    assert parts("nvidia.com/gpu") == {"track", "used", "lendable"}  # none used; no max: unlimited


def test_place_page_shows_the_quotas_as_they_stand_after_the_run(tmp_path):
    before = {q["namespace"]: q for q in quota_json("-f", f"{STORY1}/cluster.yaml")["quotas"]}
    code, out, root = page("place", "--config", CONFIG, "-f", f"{STORY1}/cluster.yaml", f"{STORY1}/a-2-gpus.yaml",
                           f"{STORY1}/b-3-gpus.yaml", "-o", "json", path=tmp_path / "p.html")
    placements = json.loads(out)["placements"]
    # a-3 (2 GPUs) borrows into quota-a's max, then b-3 (3 GPUs, within quota-b's min) preempts it.
    assert [p["outcome"] for p in placements] == ["Scheduled", "NeedsPreemption"]
    assert placements[1]["preemption"]["victims"] == ["quota-a/a-3"]
    (section,) = root.find_all("section", id="quotas")
    used = {}
    for ns in ("quota-a", "quota-b"):
        (row,) = section.find_all("tr", data_quota=f"{ns}/{ns}", data_resource="nvidia.com/gpu")
        used[ns] = row.attrs
    assert before["quota-a"]["used"]["nvidia.com/gpu"] == "4" and before["quota-b"]["used"]["nvidia.com/gpu"] == "3"
    assert used["quota-a"]["data-used"] == "4"  # 4 + 2 placed - 2 preempted
    assert used["quota-b"]["data-used"] == "6"  # 3 + 3 placed
    assert used["quota-b"]["data-lendable"] == "0" and used["quota-b"]["data-borrowed"] == "0"
    (gpu,) = section.find_all("tr", data_resource="nvidia.com/gpu", data_capacity="10")
    assert gpu.attrs["data-total-used"] == "10"


def test_place_page_without_capacity_scheduling_has_no_quota_section(tmp_path):
    _, _, root = page("place", "-f", f"{STORY1}/cluster.yaml", "samples/pod-burstable.yaml", path=tmp_path / "p.html")
    assert not root.find_all("section", id="quotas")
    assert root.find_all("section", id="nodes")


def test_compare_page_lists_every_variant_metric_and_moved_pod(tmp_path):
    code, out, err = kplan(*COMPARE, "-o", "json")
    report = json.loads(out)
    _, _, root = page(*COMPARE, path=tmp_path / "c.html")
    names = [v["name"] for v in report["variants"]]
    (variants,) = root.find_all("table", **{"class": "variants"})
    assert [th.attrs["data-variant"] for th in variants.find_all("th") if "data-variant" in th.attrs] == names
    for v in report["variants"]:
        m = v["metrics"]
        expected = {f"summary.{k}": n for k, n in v["summary"].items()}
        expected.update({k: m[k] for k in ("nodes", "nodesUsed", "nodesEmpty", "nodesUsedByRun")})
        expected.update({f"requestedRatio.{r}.{s}": x for r, stats in m["requestedRatio"].items()
                         for s, x in stats.items()})
        expected.update({f"zones.{z}": n for z, n in m["zones"].items()})
        expected.update({f"zoneSkew.{w}": n for w, n in m["zoneSkew"].items()})
        for metric, value in expected.items():
            (row,) = root.find_all("tr", data_metric=metric)
            (cell,) = row.find_all("td", data_variant=v["name"])
            assert float(cell.attrs["data-v"]) == value, metric
        for r, free in m["largestFree"].items():
            (row,) = root.find_all("tr", data_metric=f"largestFree.{r}")
            (cell,) = row.find_all("td", data_variant=v["name"])
            assert int(cell.attrs["data-v"]) == amount(r, free)  # exact; the text readable, to a tenth of its unit
            text = " ".join(cell.text().split())
            value, unit = text.split(" ") if r == "cpu" else (text[:-2], text[-2:])
            assert unit in ("cores", "Gi", "Mi")
            size = {"cores": 1000, "Gi": 2**30, "Mi": 2**20}[unit]
            assert abs(float(value) * size - amount(r, free)) <= size / 20
    moved = [p for p in report["pods"] if p["differs"]]
    assert len(moved) == report["differing"] > 0
    (section,) = root.find_all("section", id="moved")
    rows = section.find_all("tr")[1:]
    assert [r.attrs["data-pod"] for r in rows] == [p["pod"] for p in moved]
    for p in moved:
        (row,) = root.find_all("tr", data_pod=p["pod"])
        for name, place in p["placements"].items():
            (cell,) = row.find_all("td", data_variant=name)
            assert (cell.attrs["data-outcome"], cell.attrs["data-node"]) == (place["outcome"], place["node"] or "")
        decided = [e["decidedBy"] or "" for e in p.get("explanations", ())]
        assert [s.attrs["data-decided-by"] for s in row.find_all("span") if "data-decided-by" in s.attrs] == decided
    assert any(p.get("explanations") for p in moved)


def test_pages_are_the_same_bytes_on_two_runs(tmp_path):
    for name, args in (("q", ("quota", "status", "-f", f"{STORY1}/cluster.yaml", "-A")),
                       ("p", ("place", "--config", CONFIG, "-f", f"{STORY1}/cluster.yaml", f"{STORY1}/b-3-gpus.yaml")),
                       ("c", COMPARE)):
        first, second = tmp_path / f"{name}1.html", tmp_path / f"{name}2.html"
        kplan(*args, "--html", str(first))
        kplan(*args, "--html", str(second))
        assert first.read_bytes() == second.read_bytes(), name


def test_html_into_a_missing_directory_is_an_input_error_naming_the_file(tmp_path):
    target = tmp_path / "missing" / "page.html"
    for args in (("quota", "status", "-f", f"{STORY1}/cluster.yaml"), COMPARE):
        code, _, err = kplan(*args, "--html", str(target))
        assert code == 2
        lines = err.strip().splitlines()
        assert len(lines) == 1 and str(target) in lines[0], err


@pytest.mark.parametrize("command", [("check", f"{STORY1}/a-2-gpus.yaml"), ("capacity", f"{STORY1}/a-2-gpus.yaml")])
def test_check_and_capacity_pages_show_the_quotas_after_the_run(tmp_path, command):
    # quota-a uses 4 of its min 4 / max 6 GPUs; the cluster's total min is 10 and 7 are used. One pod
    # of 2 GPUs fits (quota-a at its max, 9 used in all); a second would pass quota-a's max: capacity stops at 1.
    code, out, root = page(*command, "--config", CONFIG, "-f", f"{STORY1}/cluster.yaml", "-o", "json",
                           path=tmp_path / "p.html")
    (section,) = root.find_all("section", id="quotas")
    (row,) = section.find_all("tr", data_quota="quota-a/quota-a", data_resource="nvidia.com/gpu")
    assert row.attrs["data-used"] == "6" and row.attrs["data-borrowed"] == "2"
    (gpu,) = section.find_all("tr", data_resource="nvidia.com/gpu", data_capacity="10")
    assert gpu.attrs["data-total-used"] == "9"
