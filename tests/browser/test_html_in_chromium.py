"""kplan's --html pages in a real browser: headless Chromium, driven from its command line.

For every sample command whose --help lists --html, the page (made by the CLI in a subprocess,
with -o json beside it for the expected numbers) is opened twice:
- --dump-dom: the DOM after the script ran has the page's elements, and the script's own marks
  (sortable headers made focusable, controls added) prove it ran to the end;
- --screenshot: the PNG, decoded here with zlib and numpy, is not blank.
Both runs fail on any console message of the page, uncaught exceptions included (see
headless.py for how they are read from Chromium's log, and the tests at the end for the proof
that they are caught).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import headless
from html_page import Element, parse

ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = dict(os.environ, COLUMNS="200", NO_COLOR="1", TERM="dumb", TZ="UTC")
    env.pop("GITHUB_ACTIONS", None)
    env.pop("GITHUB_STEP_SUMMARY", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


# -- what each page must show ----------------------------------------------------------------

def rows(table: Element) -> list[Element]:
    body = table.first("tbody")
    return body.find_all("tr") if body is not None else []


def first_cells(table: Element) -> list[str]:
    return [r.find("td").text().strip() for r in rows(table) if r.first("td") is not None]


def one(dom: Element, tag: str, cls: str | None = None, **attrs: str) -> Element:
    found = dom.find_all(tag, cls, **attrs)
    assert len(found) == 1, f"expected one <{tag} class={cls} {attrs}>, found {len(found)}"
    return found[0]


def check_nodes_table(dom: Element, names: list[str]) -> None:
    table = one(dom, "table", "nodes")
    assert sorted(first_cells(table)) == sorted(names)
    zones = json.loads(table.attrs["data-zones"])
    controls = table.parent.find_all("div", "controls")
    assert controls, "the script adds a zone filter before the per-node table"
    options = [o.text() for o in controls[0].find_all("option")]
    assert options == ["all zones", *zones]


def check_placements(dom: Element, placements: list[dict]) -> None:
    pods = one(dom, "table", "pods")
    assert first_cells(pods) == [p["pod"] for p in placements]
    details = dom.find_all("details", "pod")
    assert details, "a <details> per pod"
    for box in details:
        summary = box.find("summary").text()
        placement = next(p for p in placements if summary.startswith(p["pod"] + " "))
        feasible = [n for n in placement.get("nodes", []) if n["feasible"]]
        infeasible = [n for n in placement.get("nodes", []) if not n["feasible"]]
        heat = box.first("table", "heat")
        if feasible:
            assert heat is not None, f"{placement['pod']}: no heatmap"
            drawn = [r.find("td", "name").text().replace("✓", "").strip() for r in rows(heat)]
            ranked = [n["name"] for n in sorted(feasible, key=lambda n: n["rank"])]
            assert drawn == ranked[:len(drawn)] and len(drawn) == min(len(ranked), 50)
            cells = [c for r in rows(heat) for c in r.find_all("td", "h")]
            assert cells and all(re.fullmatch(r"h s(10|[0-9])", c.attrs["class"])
                                 for c in cells if c.attrs.get("data-v"))
            if placement.get("node"):
                selected = [r.find("td", "name").text() for r in rows(heat) if "selected" in r.classes]
                assert selected == [placement["node"] + " ✓"]
        else:
            assert heat is None
        if infeasible:
            chart = box.first("table", "chart")
            assert chart is not None, f"{placement['pod']}: no rejected-nodes chart"
            labels = [r.find("th").text() for r in rows(chart)]
            assert {label.split(":")[0] for label in labels} == {n["plugin"] for n in infeasible}
            for r in rows(chart):
                svg = r.first("svg")
                assert svg is not None and svg.attrs.get("role") == "img" and svg.first("rect")


def check_place(dom: Element, report: dict) -> None:
    placements = report["placements"]
    check_placements(dom, placements)
    check_nodes_table(dom, [n["name"] for n in placements[0]["nodes"]])


def check_nodes(dom: Element, report: dict) -> None:
    check_nodes_table(dom, [n["name"] for n in report["nodes"]])


# samples/pending, in queue order: api-7 (scheduled), train-1 and worker-3 (unschedulable), report-1
# (gated). The page lists the pods that would not be placed first, each part in queue order.
PENDING_ORDER = ["batch/train-1", "shop/worker-3", "shop/api-7", "batch/report-1"]


def check_pending(dom: Element, report: dict) -> None:
    assert [p["pod"] for p in report["pods"]] == ["shop/api-7", "batch/train-1", "shop/worker-3", "batch/report-1"]
    table = one(dom, "table", "pods")
    assert first_cells(table) == PENDING_ORDER
    queue = [r.find_all("td")[3].text() for r in rows(table)]  # Pod, Outcome, Node, Queue, ...
    assert queue == ["2", "3", "1", "4"]
    details = dom.find_all("details", "pod")
    assert [d.find("summary").text().split()[0] for d in details] == PENDING_ORDER


def check_check(dom: Element, report: dict) -> None:
    workloads = rows(one(dom, "table", "workloads"))
    assert len(workloads) == len(report["workloads"])
    assert all(r.first("svg") is not None for r in workloads)
    assert len(rows(one(dom, "table", "pods"))) == len(report["placements"])


def check_capacity(dom: Element, report: dict) -> None:
    heading = one(dom, "section", id="capacity").find("h2").text()
    assert heading.startswith(f"{report['replicas']} more replica")
    charts = one(dom, "section", id="capacity").find_all("table", "chart")
    counts = [sum(int(r.find("td", "num").text()) for r in rows(chart)) for chart in charts]
    assert counts == [report["replicas"]] * len(charts) and len(charts) == 2  # per zone, per node
    one(dom, "table", "nodes")


def check_capacity_preemption(dom: Element, report: dict) -> None:
    check_capacity(dom, report)
    section = one(dom, "section", id="victims")
    by_priority, by_namespace = section.find_all("table", "chart")
    for chart in (by_priority, by_namespace):
        assert sum(int(r.find("td", "num").text()) for r in rows(chart)) == report["victims"]["pods"]
        assert all(r.first("svg") is not None and r.first("svg").attrs.get("role") == "img" for r in rows(chart))
    assert [r.find("th").text() for r in rows(by_priority)] == [
        f"priority {g['priority']}" + (f" ({g['priorityClassName']})" if g["priorityClassName"] else "")
        for g in report["victims"]["perPriority"]]
    assert first_cells(one(dom, "table", "victims")) == [e["pod"] for e in report["victims"]["evicted"]]


def check_quota(dom: Element, report: dict) -> None:
    keys = {r.attrs["data-quota"] for r in rows(one(dom, "table", "quotas"))}
    assert keys == {f"{q['namespace']}/{q['name']}" for q in report["quotas"]}


def check_compare(dom: Element, report: dict) -> None:
    variants = one(dom, "table", "variants")
    assert [th.text() for th in variants.find("thead").find_all("th")][1:] == [v["name"] for v in report["variants"]]
    assert len(rows(one(dom, "table", "moved"))) == report["differing"]


def check_consolidate(dom: Element, report: dict) -> None:
    assert first_cells(one(dom, "table", "removable")) == [str(e["order"]) for e in report["removable"]]
    assert len(rows(one(dom, "table", "blockers"))) == sum(len(e["blockers"]) for e in report["blocked"])
    assert len(dom.find_all("details")) == len(report["removable"])  # the sample's blockers are rules, not fits
    charts = one(dom, "section", id="saved").find_all("table", "chart")
    counts = [sum(int(r.find("td", "num").text()) for r in rows(chart)) for chart in charts]
    assert counts == [report["saved"]["nodes"]] * 2  # per zone, per pool
    one(dom, "table", "nodes")


@dataclass(frozen=True)
class Sample:
    id: str
    command: tuple[str, ...]  # the command path, e.g. ("quota", "status")
    args: tuple[str, ...]
    check: Callable[[Element, dict], None] | None = None

    @property
    def argv(self) -> list[str]:
        return [*self.command, *self.args]


SAMPLES = [
    Sample("place", ("place",), ("samples/pod-burstable.yaml", "samples/pod-too-big.yaml",
                                 "-f", "samples/cluster.yaml"), check_place),
    Sample("pending", ("pending",), ("-f", "samples/pending/cluster.yaml", "-A"), check_pending),
    Sample("check", ("check",), ("samples/check/apps.yaml", "samples/check/too-big.yaml",
                                 "-f", "samples/cluster.yaml"), check_check),
    Sample("capacity", ("capacity",), ("samples/pod-burstable.yaml", "-f", "samples/cluster.yaml"),
           check_capacity),
    Sample("capacity-preemption", ("capacity",),
           ("samples/capacity/checkout.yaml", "-f", "samples/capacity/cluster.yaml", "--allow-preemption"),
           check_capacity_preemption),
    Sample("nodes", ("nodes",), ("-f", "samples/cluster.yaml"), check_nodes),
    Sample("quota-status", ("quota", "status"), ("-f", "samples/quota/story1/cluster.yaml", "-A"),
           check_quota),
    Sample("compare", ("compare",), ("samples/compare/web.yaml", "-f", "samples/cluster.yaml",
                                     "--config", "samples/compare/least-allocated.yaml",
                                     "--config", "samples/compare/most-allocated.yaml"), check_compare),
    Sample("consolidate", ("consolidate",), ("-f", "samples/consolidate/cluster.yaml"), check_consolidate),
]


@pytest.mark.parametrize("sample", SAMPLES, ids=[s.id for s in SAMPLES])
def test_every_sample_command_offers_html(sample: Sample) -> None:
    """Without Chromium too: a command that loses --html fails here (and its page test fails)."""
    proc = subprocess.run([sys.executable, "-m", "kplan", *sample.command, "--help"], cwd=ROOT,
                          env=_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"(?<![\w-])--html(?![\w-])", proc.stdout), \
        f"`kplan {' '.join(sample.command)} --help` does not list --html"


@dataclass
class Page:
    sample: Sample
    path: Path
    report: dict


@pytest.fixture(scope="session")
def chromium() -> str:
    binary = headless.find_chromium()
    if binary is None:
        pytest.skip(f"headless Chromium not found: {headless.INSTALL_HINT}")
    return binary


@pytest.fixture(scope="module", params=SAMPLES, ids=[s.id for s in SAMPLES])
def page(request, tmp_path_factory, chromium) -> Page:
    sample: Sample = request.param
    path = tmp_path_factory.mktemp(sample.id) / f"{sample.id}.html"
    proc = subprocess.run([sys.executable, "-m", "kplan", *sample.argv, "-o", "json", "--html", str(path)],
                          cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), f"kplan {' '.join(sample.argv)}: exit {proc.returncode}\n{proc.stderr}"
    assert path.is_file(), f"kplan {' '.join(sample.argv)} wrote no page"
    return Page(sample, path, json.loads(proc.stdout))


def test_long_node_table_is_paged_and_filtered_by_zone(tmp_path, chromium: str) -> None:
    # 150 nodes over two zones: the script shows the first 100 rows and says so; every row is in the file.
    nodes = [{"apiVersion": "v1", "kind": "Node",
              "metadata": {"name": f"node-{k:03}", "labels": {"topology.kubernetes.io/zone": f"zone-{k % 2}"}},
              "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}} for k in range(150)]
    cluster = tmp_path / "cluster.json"
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    path = tmp_path / "nodes.html"
    proc = subprocess.run([sys.executable, "-m", "kplan", "nodes", "-f", str(cluster), "--html", str(path)],
                          cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    dom, run = headless.dump_dom(path, binary=chromium)
    no_console(run)
    rows = dom.find("table", "nodes").find("tbody").find_all("tr")
    assert len(rows) == 150
    shown = [r.attrs["data-node"] for r in rows if "hidden" not in r.attrs]
    assert shown == [f"node-{k:03}" for k in range(100)]
    assert "rows 1–100 of 150" in dom.find("span", "pager").text()
    zones = [o.text() for o in dom.find("select").find_all("option")]
    assert zones == ["all zones", "zone-0", "zone-1"]


# Measures the laid-out page from inside it (the test's own script, added to a copy of the page): the
# document's width, and any box whose content is wider than the box (a table cut off in its scroller).
WIDTH_PROBE = """<script>
window.addEventListener("load", function () {
  var view = document.documentElement.clientWidth, cut = [];
  document.querySelectorAll("body *").forEach(function (e) {
    var style = getComputedStyle(e);
    if (style.overflowX !== "visible" && e.scrollWidth > e.clientWidth + 1) {
      cut.push(e.tagName.toLowerCase() + "." + e.className + " " + e.scrollWidth + ">" + e.clientWidth);
    }
    if (e.getBoundingClientRect().right > view + 1) { cut.push(e.tagName.toLowerCase() + "." + e.className); }
  });
  document.body.setAttribute("data-view-width", String(view));
  document.body.setAttribute("data-page-width", String(document.documentElement.scrollWidth));
  document.body.setAttribute("data-cut", cut.slice(0, 10).join(" | "));
});
</script>"""


def fits_width(page: Path, chromium: str, tmp_path: Path, width: int = 1280) -> None:
    """Opens the page at `width` CSS pixels and fails on anything wider than the window."""
    probe = tmp_path / f"probe-{page.name}"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", WIDTH_PROBE + "</body>"), encoding="utf-8")
    dom, run = headless.run_dom(probe, width=width, binary=chromium)
    no_console(run)
    body = one(dom, "body")
    assert body.attrs["data-view-width"] == str(width)
    assert int(body.attrs["data-page-width"]) <= width, body.attrs["data-cut"]
    assert body.attrs["data-cut"] == "", f"cut off at {width}px: {body.attrs['data-cut']}"


def no_console(run: headless.Run) -> None:
    assert not run.console, "the page logged to the console:\n" + "\n".join(map(str, run.console))


def test_page_in_the_dom_after_its_script_ran(page: Page, chromium: str) -> None:
    source = page.path.read_text(encoding="utf-8")
    dom, run = headless.dump_dom(page.path, binary=chromium)
    assert run.returncode == 0, run.stderr[-2000:]
    no_console(run)

    # The header: title, facts about the snapshot.
    h1 = one(dom, "h1")
    assert h1.text().startswith("kplan ") and page.sample.command[0] in h1.text()
    assert any(isinstance(a, Element) and a.tag == "header" for a in h1.ancestors())
    facts = one(dom, "dl", "facts")
    assert facts.find_all("dt") and len(facts.find_all("dt")) == len(facts.find_all("dd"))
    main = one(dom, "main")
    assert main.find_all("section") or main.find_all("table")

    # Self-contained: nothing is loaded from elsewhere.
    assert not [e for e in dom.iter() if e.tag in ("script", "img", "iframe") and "src" in e.attrs]
    assert not [e for e in dom.iter() if e.tag == "link" and "stylesheet" in e.attrs.get("rel", "")]
    for svg in dom.find_all("svg"):
        assert "viewBox" in svg.attrs or "viewbox" in svg.attrs

    # The script ran to its end: it is in the page, it was not in the file's markup that
    # headers are focusable, and now every header of every sortable table is; nothing is sorted yet.
    markup = parse(source)
    assert markup.find_all("script") and not [e for e in markup.iter() if "tabindex" in e.attrs]
    sortable = [t for t in dom.find_all("table", "sortable")]
    assert sortable, "the page has at least one sortable table"
    for table in sortable:
        headers = table.find("thead").find_all("th")
        assert headers and all(th.attrs.get("tabindex") == "0" and "sortable" in th.classes
                               for th in headers), f"table {table.attrs.get('class')}: headers not set up"
    assert not [e for e in dom.iter() if "aria-sort" in e.attrs]

    if page.sample.check is not None:
        page.sample.check(dom, page.report)


def test_page_screenshot_is_not_blank(page: Page, chromium: str, tmp_path: Path) -> None:
    png = tmp_path / f"{page.sample.id}.png"
    run = headless.screenshot(page.path, png, width=1280, height=1200, binary=chromium)
    assert run.returncode == 0 and png.is_file(), run.stderr[-2000:]
    no_console(run)
    image = headless.decode_png(png.read_bytes())
    assert image.shape[:2] == (1200, 1280)
    rgb = image[:, :, :3].reshape(-1, 3)
    packed = (rgb[:, 0].astype(np.uint32) << 16) | (rgb[:, 1].astype(np.uint32) << 8) | rgb[:, 2]
    colours = np.unique(packed)
    assert len(colours) >= 64, f"only {len(colours)} distinct colours"
    ink = float((rgb.min(axis=1) < 245).mean())
    assert ink >= 0.03, f"only {ink:.1%} of the pixels are not white"
    assert tuple(image[2, 2, :3]) == (255, 255, 255), "the page background is white"
    if page.sample.id == "place":
        # The heatmap sits in the first screen: its cell colours are in the picture.
        source = page.path.read_text(encoding="utf-8")
        steps = dict(re.findall(r"table\.heat td\.s(\d+)\{background:#([0-9a-f]{6})", source))
        wanted = {steps[step] for step in re.findall(r'class="h s(\d+)"', source)}
        assert wanted
        present = {"%06x" % int(c) for c in colours}
        assert wanted <= present, f"heatmap colours missing from the screenshot: {wanted - present}"


def test_page_fits_a_laptop_screen(page: Page, chromium: str, tmp_path: Path) -> None:
    fits_width(page.path, chromium, tmp_path)


EKS_NAMES = {  # the sample cluster's nodes, named as on EKS
    "node-a1": "ip-10-0-123-45.eu-west-1.compute.internal",
    "node-b1": "ip-10-0-77-201.eu-west-1.compute.internal",
    "node-b2": "ip-10-0-77-9.eu-west-1.compute.internal",
    "node-c1": "ip-10-0-200-17.eu-west-1.compute.internal",
    "node-c2": "ip-10-0-200-180.eu-west-1.compute.internal",
    "gpu-a1": "ip-10-0-5-66.eu-west-1.compute.internal",
}


@pytest.mark.parametrize("command", [
    ("nodes", "--after", "samples/pod-burstable.yaml", "--cordon", "node-b1", "-L",
     "node.kubernetes.io/instance-type,pool", "--group-by", "pool"),
    ("place", "samples/pod-burstable.yaml", "samples/pod-too-big.yaml", "--drain", "node-b1"),
], ids=["nodes-after", "place-drained"])
def test_long_node_names_and_a_run_still_fit_1280_pixels(command, chromium: str, tmp_path: Path) -> None:
    # The widest the node table gets: EKS node names, before -> after texts, a cordoned node's status,
    # taints, label columns; each resource's quantities in one readable unit.
    text = (ROOT / "samples" / "cluster.yaml").read_text()
    for short, long in EKS_NAMES.items():
        text = text.replace(short, long)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(text)
    args = [a.replace("node-b1", EKS_NAMES["node-b1"]) for a in command]
    path = tmp_path / "page.html"
    proc = subprocess.run([sys.executable, "-m", "kplan", *args, "-f", str(cluster), "--html", str(path)],
                          cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    fits_width(path, chromium, tmp_path)
    dom, _ = headless.dump_dom(path, binary=chromium)
    node = next(r for r in rows(one(dom, "table", "nodes")) if r.attrs["data-node"] == EKS_NAMES["node-b1"])
    assert node.find("td", "status").text() == "Ready,SchedulingDisabled"
    allocatable = [td.text() for td in node.find_all("td", "num")][1:]
    assert allocatable == ["3.92 cores", "15Gi"]  # 3920m and 15Gi, as people read them


# -- the console detector catches what it must, and only that --------------------------------

RECORDED_STDERR = """\
/usr/bin/chromium: 9: [: 25276502016: unexpected operator
[15257:15287:1125/170733.283641:ERROR:dbus/bus.cc:405] Failed to connect to the bus: Failed to connect to socket /run/dbus/system_bus_socket: No such file or directory
[15303:15303:1125/170733.339938:WARNING:media/gpu/vaapi/vaapi_wrapper.cc:1655] drmGetDevices2() has not found any devices
[15257:15257:1125/170733.400718:ERROR:dbus/object_proxy.cc:572] Failed to call method: org.freedesktop.DBus.NameHasOwner: object_path= /org/freedesktop/DBus: unknown error type: 
[15438:15438:1125/170736.712161:INFO:CONSOLE:3] "deliberate console error", source: file:///tmp/bad.html (3)
[15438:15438:1125/170736.712179:INFO:CONSOLE:5] "Uncaught TypeError: Cannot read properties of null (reading 'boom')", source: file:///tmp/bad.html (5)
[15438:15438:1125/170736.712190:INFO:CONSOLE:7] "two
lines", source: file:///tmp/bad.html (7)
[1125/170736.718453:INFO:CONSOLE(6)] "Uncaught (in promise) Error: older log format", source: file:///tmp/bad.html (6)
[15438:15438:1125/170736.712199:INFO:CONSOLE:1] "from the browser itself", source: chrome://resources/x.js (1)
[15257:15257:1125/170733.427808:WARNING:ui/base/idle/idle_linux.cc:111] None of the known D-Bus ScreenSaver services could be used.
[15438:15438:1125/170736.712199:INFO:CONSOLE:9] "last", source: file:///tmp/bad.html (9)
4973 bytes written to file /tmp/bad.png
"""


def test_console_detector_reads_page_messages_and_ignores_chromium_noise() -> None:
    messages = headless.console_messages(RECORDED_STDERR)
    assert [(m.text, m.line) for m in messages] == [
        ("deliberate console error", 3),
        ("Uncaught TypeError: Cannot read properties of null (reading 'boom')", 5),
        ("two\nlines", 7),
        ("Uncaught (in promise) Error: older log format", 6),
        ("last", 9),
    ]
    assert {m.source for m in messages} == {"file:///tmp/bad.html"}
    noise_only = "\n".join(l for l in RECORDED_STDERR.splitlines() if "CONSOLE" not in l and '"' not in l)
    assert headless.console_messages(noise_only) == []


BROKEN_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>broken</title></head>
<body><h1>A page that fails</h1>
<script>console.error("deliberate console.error");</script>
<script>throw new Error("deliberate uncaught throw");</script>
<script>Promise.reject(new Error("deliberate unhandled rejection"));</script>
<script>document.addEventListener("DOMContentLoaded", function () { null.afterParse(); });</script>
<script>document.body.setAttribute("data-last-script", "ran");</script>
</body></html>
"""

CLEAN_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>clean</title></head>
<body><h1>A page that works</h1>
<script>document.body.setAttribute("data-ran", "yes");</script>
</body></html>
"""


@pytest.mark.parametrize("mode", ["dump-dom", "screenshot"])
def test_console_detector_catches_errors_of_a_real_page(mode: str, chromium: str, tmp_path: Path) -> None:
    broken, clean = tmp_path / "broken.html", tmp_path / "clean.html"
    broken.write_text(BROKEN_PAGE, encoding="utf-8")
    clean.write_text(CLEAN_PAGE, encoding="utf-8")
    if mode == "dump-dom":
        dom, run = headless.dump_dom(broken, binary=chromium)
        assert one(dom, "body").attrs.get("data-last-script") == "ran"
        clean_dom, clean_run = headless.dump_dom(clean, binary=chromium)
        assert one(clean_dom, "body").attrs.get("data-ran") == "yes"
    else:
        run = headless.screenshot(broken, tmp_path / "broken.png", width=400, height=300, binary=chromium)
        clean_run = headless.screenshot(clean, tmp_path / "clean.png", width=400, height=300, binary=chromium)
    texts = [m.text for m in run.console]
    assert any(t == "deliberate console.error" for t in texts), texts
    assert any(t.startswith("Uncaught") and "deliberate uncaught throw" in t for t in texts), texts
    assert any(t.startswith("Uncaught (in promise)") and "deliberate unhandled rejection" in t
               for t in texts), texts
    assert any(t.startswith("Uncaught TypeError") and "afterParse" in t for t in texts), texts
    assert all(m.source == broken.resolve().as_uri() for m in run.console)
    # Chromium's own noise (dbus, GPU, ...) is still on stderr, and counts for nothing.
    assert clean_run.console == [], clean_run.stderr


def test_a_kplan_page_whose_script_fails_is_caught(chromium: str, tmp_path: Path) -> None:
    """The checks above would notice the page's own script failing: break it and look."""
    path = tmp_path / "place.html"
    sample = SAMPLES[0]
    proc = subprocess.run([sys.executable, "-m", "kplan", *sample.argv, "--html", str(path)],
                          cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    source = path.read_text(encoding="utf-8")
    assert source.count('"use strict";') == 1
    path.write_text(source.replace('"use strict";', '"use strict"; null.kplanScriptFails();'), encoding="utf-8")
    dom, run = headless.dump_dom(path, binary=chromium)
    assert [m.text for m in run.console if "kplanScriptFails" in m.text], run.console
    assert all(m.text.startswith("Uncaught TypeError") for m in run.console)
    assert not [th for th in dom.find_all("th") if "tabindex" in th.attrs]


def test_png_decoder_undoes_every_filter_type() -> None:
    rng = np.random.default_rng(7)
    for channels in (3, 4):
        pixels = rng.integers(0, 256, size=(41, 29, channels), dtype=np.uint8)
        pixels[10:20] = 255  # flat runs too, where the predictors agree
        types = np.resize(np.arange(5, dtype=np.uint8), 41)
        rng.shuffle(types)
        decoded = headless.decode_png(headless.encode_png(pixels, types))
        assert decoded.dtype == np.uint8 and np.array_equal(decoded, pixels)
    with pytest.raises(ValueError):
        headless.decode_png(b"GIF89a")
