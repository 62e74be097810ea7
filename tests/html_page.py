"""Reads a page kplan wrote with --html (or the DOM Chromium dumps) into a small element tree
(html.parser), for tests."""
from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"meta", "link", "br", "hr", "img", "input", "wbr", "col", "area", "base", "source", "embed", "track"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list = field(default_factory=list)  # Elements and strings
    parent: "Element | None" = field(default=None, repr=False, compare=False)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def text(self, sep: str = "") -> str:
        """The text inside, in document order; sep goes between every text run and child element."""
        return sep.join(c if isinstance(c, str) else c.text(sep) for c in self.children)

    def iter(self):
        yield self
        for c in self.children:
            if isinstance(c, Element):
                yield from c.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list["Element"]:
        """Elements by tag, class and attribute values (an attribute given as None must be present)."""
        out = []
        for e in self.iter():
            if tag and e.tag != tag:
                continue
            if cls and cls not in e.classes:
                continue
            if any((name.replace("_", "-") not in e.attrs) if value is None else
                   e.attrs.get(name.replace("_", "-")) != value for name, value in attrs.items()):
                continue
            out.append(e)
        return out

    def first(self, *args, **kwargs) -> "Element | None":
        """The first element find_all gives, or None."""
        found = self.find_all(*args, **kwargs)
        return found[0] if found else None

    def find(self, *args, **kwargs) -> "Element":
        """The first element find_all gives; there must be one."""
        found = self.first(*args, **kwargs)
        assert found is not None, f"no element {args} {kwargs}"
        return found

    def ancestors(self):
        """The parent, its parent, ... up to the document."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent


class _Builder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        element = Element(tag, {k: v or "" for k, v in attrs}, parent=self.stack[-1])
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].children.append(Element(tag, {k: v or "" for k, v in attrs}, parent=self.stack[-1]))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        assert self.stack[-1].tag == tag, f"</{tag}> closes <{self.stack[-1].tag}>"
        self.stack.pop()

    def handle_data(self, data):
        self.stack[-1].children.append(data)


def parse(text: str) -> Element:
    """Parses the page; unbalanced tags fail the test that reads it."""
    builder = _Builder()
    builder.feed(text)
    builder.close()
    assert builder.stack == [builder.root], f"unclosed <{builder.stack[-1].tag}>"
    return builder.root
