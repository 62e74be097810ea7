(function () {
  "use strict";
  var PAGE = 100;
  function cellValue(row, index) {
    var cell = row.cells[index];
    if (!cell) { return ""; }
    var v = cell.getAttribute("data-v");
    if (v !== null) { return v === "" ? -Infinity : parseFloat(v); }
    return cell.textContent.trim();
  }
  function compare(a, b) {
    if (typeof a === "number" && typeof b === "number") { return a - b; }
    return String(a).localeCompare(String(b), undefined, {numeric: true});
  }
  function Table(table) {
    this.table = table;
    this.body = table.tBodies[0];
    this.rows = Array.prototype.slice.call(this.body.rows);
    this.page = 0;
    this.zone = "";
    this.paged = table.classList.contains("paged") && this.rows.length > PAGE;
    this.pager = null;
  }
  Table.prototype.visible = function () {
    var zone = this.zone;
    return this.rows.filter(function (row) { return !zone || row.getAttribute("data-zone") === zone; });
  };
  Table.prototype.draw = function () {
    var shown = this.visible();
    var pages = this.paged ? Math.max(1, Math.ceil(shown.length / PAGE)) : 1;
    if (this.page >= pages) { this.page = pages - 1; }
    var first = this.paged ? this.page * PAGE : 0;
    var last = this.paged ? first + PAGE : shown.length;
    var keep = new Set(shown.slice(first, last));
    var fragment = document.createDocumentFragment();
    this.rows.forEach(function (row) {
      row.hidden = !keep.has(row);
      fragment.appendChild(row);
    });
    this.body.appendChild(fragment);
    if (this.pager) {
      this.pager.label.textContent = shown.length ? "rows " + (first + 1) + "–" + Math.min(last, shown.length) +
        " of " + shown.length : "no rows";
      this.pager.prev.disabled = this.page === 0;
      this.pager.next.disabled = this.page >= pages - 1;
    }
  };
  Table.prototype.sortBy = function (th) {
    var index = th.cellIndex;
    var descending = th.getAttribute("aria-sort") === "ascending";
    Array.prototype.forEach.call(th.parentNode.cells, function (other) { other.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", descending ? "descending" : "ascending");
    var order = this.rows.map(function (row, k) { return [cellValue(row, index), k, row]; });
    order.sort(function (a, b) { return (descending ? compare(b[0], a[0]) : compare(a[0], b[0])) || a[1] - b[1]; });
    this.rows = order.map(function (item) { return item[2]; });
    this.page = 0;
    this.draw();
  };
  Table.prototype.addControls = function () {
    var self = this;
    var controls = document.createElement("div");
    controls.className = "controls";
    var zones = this.table.getAttribute("data-zones");
    if (zones) {
      var select = document.createElement("select");
      select.setAttribute("aria-label", "Show one zone");
      [""].concat(JSON.parse(zones)).forEach(function (zone) {
        var option = document.createElement("option");
        option.value = zone;
        option.textContent = zone || "all zones";
        select.appendChild(option);
      });
      select.addEventListener("change", function () { self.zone = select.value; self.page = 0; self.draw(); });
      controls.appendChild(select);
    }
    if (this.paged) {
      var pager = document.createElement("span");
      pager.className = "pager";
      var prev = document.createElement("button");
      prev.type = "button"; prev.textContent = "‹ previous";
      var next = document.createElement("button");
      next.type = "button"; next.textContent = "next ›";
      var label = document.createElement("span");
      prev.addEventListener("click", function () { self.page -= 1; self.draw(); });
      next.addEventListener("click", function () { self.page += 1; self.draw(); });
      pager.appendChild(prev); pager.appendChild(label); pager.appendChild(next);
      controls.appendChild(pager);
      this.pager = {prev: prev, next: next, label: label};
    }
    if (controls.childNodes.length) { this.table.parentNode.insertBefore(controls, this.table); }
  };
  document.querySelectorAll("table.sortable").forEach(function (element) {
    var table = new Table(element);
    element.tHead.querySelectorAll("th").forEach(function (th) {
      th.classList.add("sortable");
      th.tabIndex = 0;
      th.addEventListener("click", function () { table.sortBy(th); });
      th.addEventListener("keydown", function (event) {
        if (event.key === "Enter" || event.key === " ") { event.preventDefault(); table.sortBy(th); }
      });
    });
    table.addControls();
    table.draw();
  });
}());
