"""What `kplan check` writes for CI systems from a CheckReport: JUnit XML, GitHub workflow commands
(::error annotations pointing at the manifests) and the Markdown step summary."""
from __future__ import annotations

import os
import re
from typing import Any
from xml.etree import ElementTree as ET

from kplan.report.check_table import failure_lines


def rollout_line(e: dict[str, Any]) -> str:
    """What a stuck rollout says in JUnit, GitHub annotations and tables ("" for any other entry)."""
    stuck = (e.get("rollout") or {}).get("stuck")
    return stuck["summary"] if stuck else ""


DOCUMENT = re.compile(r"^(.*) \(document (\d+)\)$")


def manifest_location(source: str) -> tuple[str, int | None]:
    """Splits a workload's source, "path (document N)", into the path and N (None for a file's only
    or first document)."""
    match = DOCUMENT.match(source)
    return (match.group(1), int(match.group(2))) if match else (source, None)


def ci_path(path: str) -> str:
    """A manifest's path as CI systems link files: relative to $GITHUB_WORKSPACE when it holds the file,
    else to the root of the git checkout holding it, else as given, normalized ("../w/apps.yaml")."""
    absolute = os.path.abspath(path)
    roots = [os.environ.get("GITHUB_WORKSPACE") or "", _checkout_root(os.path.dirname(absolute)) or ""]
    for root in roots:
        if root and os.path.commonpath([os.path.abspath(root), absolute]) == os.path.abspath(root):
            return os.path.relpath(absolute, root)
    return os.path.normpath(path)


def _checkout_root(folder: str) -> str | None:
    """The nearest folder at or above `folder` with a .git in it (a checkout, or a worktree's file)."""
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _case_name(e: dict[str, Any]) -> str:
    """A workload's test case: kind/ns/name, with its document's index when its file holds several."""
    _, document = manifest_location(e["manifest"])
    name = f"{e['kind']}/{e['namespace']}/{e['name']}"
    return f"{name} (document {document})" if document else name


def junit_xml(report: dict[str, Any]) -> bytes:
    """One testsuite "kplan"; one testcase per workload (classname kplan.check, name kind/ns/name, file
    its manifest as CI links it); a failure's text adds the nearest nodes and the hints."""
    entries = report["workloads"]
    suite = ET.Element("testsuite", name="kplan", tests=str(len(entries)),
                       failures=str(sum(not e["passed"] for e in entries)), errors="0", skipped="0")
    for e in entries:
        case = ET.SubElement(suite, "testcase", classname="kplan.check", name=_case_name(e),
                             file=ci_path(manifest_location(e["manifest"])[0]))
        if not e["passed"]:
            f = e["firstFailure"] or {}
            stuck = rollout_line(e)
            failure = ET.SubElement(case, "failure", message=stuck or f["message"],
                                    type="RolloutStuck" if stuck else f["outcome"])
            failure.text = f"{e['placed']}/{e['wanted']} replicas placed"
            if f:
                failure.text += f"; first failure: pod {f['pod']} ({f['outcome']}, {f['plugin']}): {f['message']}"
            if stuck:
                failure.text = f"{stuck}\n{failure.text}"
            failure.text = "\n".join([failure.text, *failure_lines(f)])
    root = ET.Element("testsuites")
    root.append(suite)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def github_annotations(report: dict[str, Any]) -> list[str]:
    """GitHub workflow commands, one ::error per failed workload, pointing at its manifest; the message
    goes on with the nearest nodes and the hints, a line each."""
    lines = []
    for e in report["workloads"]:
        if e["passed"]:
            continue
        f = e["firstFailure"] or {}
        manifest = ci_path(manifest_location(e["manifest"])[0])
        what = rollout_line(e) or f"{f['pod']} {f['outcome']}: {f['message']}"
        msg = "\n".join([f"{e['kind']}/{e['namespace']}/{e['name']}: {e['placed']}/{e['wanted']} replicas placed; "
                         f"{what}", *failure_lines(f)])
        title = "kplan " + (f.get("plugin") or "rollout")
        lines.append(f"::error file={_escape_property(manifest)},title={_escape_property(title)}"
                     f"::{_escape_data(msg)}")
    return lines


def markdown_summary(report: dict[str, Any]) -> str:
    """A Markdown table for $GITHUB_STEP_SUMMARY; under it, per failed workload, what its first failed
    pod's nearest nodes lack and the hints."""
    s = report["summary"]
    verdict = "passed" if not s["failed"] else f"{s['failed']} workload(s) failed"
    lines = [f"### kplan check: {verdict}", "",
             "| Workload | Placed | Where | First failure |", "| --- | --- | --- | --- |"]
    for e in report["workloads"]:
        where = ", ".join(f"{n}×{c}" for n, c in e["nodes"].items()) or "-"
        failure = _markdown(rollout_line(e) or (e["firstFailure"]["message"] if e["firstFailure"] else "")).replace(
            "|", "\\|")
        lines.append(f"| {e['kind']}/{e['namespace']}/{e['name']} | {e['placed']}/{e['wanted']} | {where} | {failure} |")
    for e in report["workloads"]:
        more = failure_lines(e["firstFailure"] or {})
        if more:
            lines += ["", f"**{e['kind']}/{e['namespace']}/{e['name']}**, pod `{e['firstFailure']['pod']}`:", ""]
            lines += [f"- {_markdown(line)}" for line in more]
    return "\n".join(lines) + "\n\n"


def _markdown(text: str) -> str:
    """Text as it reads in Markdown: the characters that would start markup escaped."""
    return re.sub(r"([\\`*_\[\]<>])", r"\\\1", text)
