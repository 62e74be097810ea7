"""Reading dumps: what `kubectl get -o yaml|json` prints, multi-document YAML, `kind: List`,
folders of those (recursively), `.gz` files, and `-` for standard input."""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any, Iterator

import yaml

from kplan.errors import InputError

SUFFIXES = (".yaml", ".yml", ".json")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def iter_documents(path: str) -> Iterator[tuple[str, int, Any]]:
    """Yields (source, document number, object) for every object in a path, expanding Lists."""
    for source, text in _read_all(path):
        for number, doc in enumerate(_parse(text, source), start=1):
            yield from ((source, number, obj) for obj in _expand(doc, source, number))


def _read_all(path: str) -> Iterator[tuple[str, str]]:
    if path == "-":
        yield "<stdin>", sys.stdin.read()
        return
    p = Path(path)
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file() and _is_dump(f.name))
        for f in files:
            yield str(f), _read_file(f)
    elif p.exists():
        yield path, _read_file(p)
    else:
        raise InputError("no such file or directory", path)


def _is_dump(name: str) -> bool:
    return name.removesuffix(".gz").endswith(SUFFIXES)


def _read_file(p: Path) -> str:
    try:
        data = p.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        return data.decode("utf-8")
    except (OSError, EOFError) as err:
        raise InputError(f"cannot read: {getattr(err, 'strerror', None) or err}", str(p)) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", str(p)) from None


def _parse(text: str, source: str) -> list[Any]:
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            return [json.loads(text)]
        except json.JSONDecodeError as err:
            raise InputError(f"malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}", source) from None
    try:
        return [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise InputError(f"malformed YAML{where}: {problem}", source) from None


def _expand(doc: Any, source: str, number: int) -> Iterator[dict]:
    if isinstance(doc, list):
        for item in doc:
            yield from _expand(item, source, number)
        return
    if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str):
        raise InputError("not a Kubernetes object (no kind)", source, number)
    kind = doc["kind"]
    if kind.endswith("List") and isinstance(doc.get("items"), list):
        item_kind = kind[: -len("List")]
        for item in doc["items"]:
            if isinstance(item, dict) and "kind" not in item and item_kind:
                item = {"kind": item_kind, **item}  # typed lists (kubectl's PodList) omit item kinds
            yield from _expand(item, source, number)
        return
    yield doc
