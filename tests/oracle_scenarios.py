"""Scenarios answered by the real kube-scheduler, kept in the repository: tests/oracle/<folder>.tar.xz.

Each archive holds one folder of scenarios (cases, storage, devices), a scenario per subfolder
(cluster.json, the pods to place, meta.json, oracle.jsonl: kube-scheduler's answer for each pod; see
tests/oracle/README.md). scripts/refresh_oracle.sh packs them again from ../shared/oracle when it
grows. Tests list the scenarios from the archive at collection and unpack it once per session.
"""
from __future__ import annotations

import tarfile
from pathlib import Path

ORACLE = Path(__file__).resolve().parent / "oracle"


def archive(folder: str) -> Path:
    return ORACLE / f"{folder}.tar.xz"


def scenario_names(folder: str) -> list[str]:
    """The scenarios of a folder (those with an oracle.jsonl), sorted."""
    with tarfile.open(archive(folder)) as tar:
        return sorted(Path(m.name).parent.name for m in tar.getmembers()
                      if m.isfile() and Path(m.name).name == "oracle.jsonl" and len(Path(m.name).parts) == 3)


def unpack(folder: str, into: Path) -> Path:
    """Extracts the folder's archive under `into`; returns the folder of its scenarios."""
    with tarfile.open(archive(folder)) as tar:
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}  # Python 3.12+ warns without one
        tar.extractall(into, **safe)
    return into / folder
