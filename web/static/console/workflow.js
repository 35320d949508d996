// Sundial console: the workflow graph. dagre (vendored) lays the graph out; this file draws it
// as SVG, from the JSON each .wf-graph carries in data-graph:
//   {nodes: [{name, kind, sub, href, state, result}], edges: [{from, to, when}], run}
// It redraws what htmx swaps in (a running workflow's page polls its live part), and runs the
// editor's "add node" / "add edge" buttons. No build step: plain ES5, like app.js.
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var seq = 0;
  var measure = document.createElement("canvas").getContext("2d");

  function el(tag, attrs, parent, text) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) { if (attrs[k] !== undefined && attrs[k] !== null) { e.setAttribute(k, attrs[k]); } }
    if (text !== undefined) { e.textContent = text; }
    if (parent) { parent.appendChild(e); }
    return e;
  }

  function width(text, font) {
    measure.font = font;
    return measure.measureText(text).width;
  }

  // clip shortens a text to at most max pixels, with an ellipsis.
  function clip(text, font, max) {
    if (width(text, font) <= max) { return text; }
    while (text.length > 1 && width(text + "…", font) > max) { text = text.slice(0, -1); }
    return text + "…";
  }

  var NAME_FONT = "600 13px system-ui, sans-serif", SUB_FONT = "12px system-ui, sans-serif";
  var MAX_W = 200, NODE_H = 46, LABELS = { on_failure: "on failure", always: "always", "true": "true", "false": "false" };

  // draw replaces the content of a .wf-graph with its SVG.
  function draw(box) {
    var data;
    try { data = JSON.parse(box.getAttribute("data-graph")); } catch (e) { return; }
    if (typeof dagre === "undefined" || !data || !data.nodes) { return; }
    var narrow = box.clientWidth > 0 && box.clientWidth < 560;
    var g = new dagre.graphlib.Graph();
    g.setGraph({ rankdir: narrow ? "TB" : "LR", nodesep: narrow ? 18 : 26, ranksep: narrow ? 40 : 56, edgesep: 12, marginx: 6, marginy: 6 });
    g.setDefaultEdgeLabel(function () { return {}; });
    data.nodes.forEach(function (n) {
      var sub = data.run ? n.state : n.sub || "";
      var w = Math.min(MAX_W, Math.max(width(n.name, NAME_FONT), width(sub, SUB_FONT)) + 28);
      if (n.kind === "decision") { w += 24; }
      g.setNode(n.name, { width: Math.max(w, 72), height: NODE_H, node: n, sub: sub });
    });
    data.edges.forEach(function (e) {
      if (!g.hasNode(e.from) || !g.hasNode(e.to)) { return; }
      var label = LABELS[e.when] || "";
      g.setEdge(e.from, e.to, { edge: e, label: label, width: label ? width(label, SUB_FONT) + 8 : 0, height: label ? 16 : 0, labelpos: "c" });
    });
    dagre.layout(g);
    var gw = Math.ceil(g.graph().width || 0), gh = Math.ceil(g.graph().height || 0);
    var id = "wf" + (++seq);
    var svg = el("svg", { "class": "wf-svg", viewBox: "0 0 " + gw + " " + gh, width: gw, height: gh, role: "presentation" });
    var defs = el("defs", {}, svg);
    ["on_success", "on_failure", "always", "true", "false"].forEach(function (w) {
      var m = el("marker", { id: id + "-" + w, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
      el("path", { d: "M0,0 L10,5 L0,10 z", "class": "wf-arrow " + w }, m);
    });
    var edges = el("g", { "class": "wf-edges" }, svg);
    g.edges().forEach(function (ref) {
      var e = g.edge(ref), pts = e.points || [];
      if (!pts.length) { return; }
      var d = "M" + pts[0].x + "," + pts[0].y;
      for (var i = 1; i < pts.length - 1; i++) {
        var mx = (pts[i].x + pts[i + 1].x) / 2, my = (pts[i].y + pts[i + 1].y) / 2;
        d += " Q" + pts[i].x + "," + pts[i].y + " " + mx + "," + my;
      }
      var last = pts[pts.length - 1];
      d += " L" + last.x + "," + last.y;
      var ge = el("g", { "class": "wf-edge-g", "data-from": ref.v, "data-to": ref.w, "data-when": e.edge.when }, edges);
      el("title", {}, ge, ref.v + " → " + ref.w + " (" + e.edge.when.replace("_", " ") + ")");
      el("path", { d: d, "class": "wf-edge " + e.edge.when, "marker-end": "url(#" + id + "-" + e.edge.when + ")" }, ge);
      if (e.label) {
        el("rect", { "class": "wf-edge-label-bg", x: e.x - e.width / 2, y: e.y - 8, width: e.width, height: 16, rx: 3 }, ge);
        el("text", { "class": "wf-edge-label " + e.edge.when, x: e.x, y: e.y + 4, "text-anchor": "middle" }, ge, e.label);
      }
    });
    var nodes = el("g", { "class": "wf-nodes" }, svg);
    g.nodes().forEach(function (name) {
      var v = g.node(name), n = v.node, w = v.width, h = v.height;
      var parent = nodes;
      if (n.href) { parent = el("a", { href: n.href, "class": "wf-link" }, nodes); }
      var cls = "wf-node kind-" + n.kind + (n.state ? " state-" + n.state : "");
      var gn = el("g", { "class": cls, "data-node": name, transform: "translate(" + (v.x - w / 2) + "," + (v.y - h / 2) + ")" }, parent);
      var tip = name + (n.kind === "decision" ? " (decision" + (n.sub ? ": " + n.sub : "") + ")" : n.sub ? " (" + n.sub + ")" : "");
      if (n.state) { tip += "\n" + n.state; }
      if (n.result) { tip += "\nresult: " + n.result; }
      el("title", {}, gn, tip);
      if (n.kind === "decision") {
        var pts = "0," + h / 2 + " 14,0 " + (w - 14) + ",0 " + w + "," + h / 2 + " " + (w - 14) + "," + h + " 14," + h;
        el("polygon", { "class": "wf-shape", points: pts }, gn);
      } else {
        el("rect", { "class": "wf-shape", width: w, height: h, rx: 6 }, gn);
      }
      var inner = w - (n.kind === "decision" ? 36 : 16);
      el("text", { "class": "wf-name", x: w / 2, y: 19, "text-anchor": "middle" }, gn, clip(name, NAME_FONT, inner));
      if (v.sub) { el("text", { "class": "wf-sub", x: w / 2, y: 35, "text-anchor": "middle" }, gn, clip(v.sub, SUB_FONT, inner)); }
    });
    box.textContent = "";
    box.appendChild(svg);
    box.setAttribute("data-drawn", String(seq));
  }

  function drawAll(root) {
    var boxes = root.querySelectorAll ? root.querySelectorAll(".wf-graph") : [];
    Array.prototype.forEach.call(boxes, draw);
    if (root.classList && root.classList.contains("wf-graph")) { draw(root); }
  }

  // An editor row copied by "add": empty, its ids renumbered, its errors cleared.
  function addRow(container) {
    var rows = container.querySelectorAll(".wf-row");
    var last = rows[rows.length - 1];
    if (!last) { return; }
    var n = rows.length;
    var row = last.cloneNode(true);
    var renumber = function (v) { return v.replace(/-\d+(?=\s|$)/g, "-" + n); };
    row.querySelectorAll("[id]").forEach(function (e) { e.id = renumber(e.id); });
    row.querySelectorAll("label[for]").forEach(function (e) { e.htmlFor = renumber(e.htmlFor); });
    ["aria-describedby", "aria-controls"].forEach(function (a) {
      row.querySelectorAll("[" + a + "]").forEach(function (e) { e.setAttribute(a, renumber(e.getAttribute(a))); });
    });
    row.querySelectorAll("[aria-invalid]").forEach(function (e) { e.removeAttribute("aria-invalid"); });
    row.querySelectorAll("input").forEach(function (e) { e.value = ""; e.removeAttribute("data-name"); });
    row.querySelectorAll("select").forEach(function (e) { e.selectedIndex = 0; });
    row.querySelectorAll(".err, .wf-pick-list").forEach(function (e) { e.textContent = ""; });
    var legend = row.querySelector("legend");
    if (legend) { legend.textContent = legend.textContent.replace(/\d+$/, String(n + 1)); }
    container.appendChild(row);
    if (typeof htmx !== "undefined") { htmx.process(row); }
    kinds(row);
    var first = row.querySelector("input:not([type=hidden]), select");
    if (first) { first.focus(); }
  }

  // kinds shows each input of a node row that the row's kind has (data-kinds lists them).
  function kinds(root) {
    root.querySelectorAll('.wf-row[data-row="node"]').forEach(function (row) {
      var kind = row.querySelector('select[name="node_kind"]');
      kind = kind ? kind.value : "job";
      row.setAttribute("data-kind", kind);
      row.querySelectorAll("[data-kinds]").forEach(function (f) {
        f.hidden = f.getAttribute("data-kinds").split(" ").indexOf(kind) < 0;
      });
    });
    if (root.matches && root.matches('.wf-row[data-row="node"]')) { kinds(root.parentNode); }
  }

  // The job picker: its search lists jobs (htmx asks /workflow-jobs); picking one sets the
  // row's job id. Leaving it unpicked puts back the name of the job the row has.
  function pickClose(pick, restore) {
    var list = pick.querySelector(".wf-pick-list"), q = pick.querySelector('input[type="search"]');
    if (list) { list.textContent = ""; }
    if (q) {
      q.setAttribute("aria-expanded", "false");
      if (restore) { q.value = pick.querySelector(".wf-pick-id").getAttribute("data-name") || ""; }
    }
  }

  function pickJob(opt) {
    var pick = opt.closest(".wf-pick"), id = pick.querySelector(".wf-pick-id"), q = pick.querySelector('input[type="search"]');
    id.value = opt.getAttribute("data-job");
    id.setAttribute("data-name", opt.getAttribute("data-name"));
    q.value = opt.getAttribute("data-name");
    pickClose(pick, false);
    q.focus();
    id.dispatchEvent(new Event("change", { bubbles: true }));
  }

  function pickOptions(pick) { return Array.prototype.slice.call(pick.querySelectorAll(".wf-pick-opt")); }

  document.addEventListener("mousedown", function (e) {
    // The search keeps the focus while an option is clicked, so leaving it does not close the list first.
    if (e.target.closest && e.target.closest(".wf-pick-opt")) { e.preventDefault(); }
  });
  document.addEventListener("keydown", function (e) {
    var pick = e.target.closest && e.target.closest(".wf-pick");
    if (!pick) { return; }
    var opts = pickOptions(pick), at = opts.indexOf(e.target);
    if (e.key === "Escape") { pickClose(pick, true); pick.querySelector('input[type="search"]').focus(); e.preventDefault(); }
    else if (e.key === "ArrowDown" && opts.length) { opts[Math.min(at + 1, opts.length - 1)].focus(); e.preventDefault(); }
    else if (e.key === "ArrowUp" && at >= 0) { (at === 0 ? pick.querySelector('input[type="search"]') : opts[at - 1]).focus(); e.preventDefault(); }
    else if (e.key === "Enter" && at < 0) {
      // Enter in the search picks the first job instead of submitting the form.
      e.preventDefault();
      if (opts.length) { pickJob(opts[0]); }
    }
  });
  // A search starts over: the picked job's name is selected, so typing replaces it.
  document.addEventListener("focusin", function (e) { if (e.target.name === "job_q") { e.target.select(); } });
  document.addEventListener("focusout", function (e) {
    var pick = e.target.closest && e.target.closest(".wf-pick");
    if (pick && !(e.relatedTarget && pick.contains(e.relatedTarget))) { pickClose(pick, true); }
  });
  document.body.addEventListener("htmx:afterSwap", function (e) {
    if (!e.detail.target.classList.contains("wf-pick-list")) { return; }
    var pick = e.detail.target.closest(".wf-pick"), q = pick.querySelector('input[type="search"]');
    if (document.activeElement !== q && !pick.contains(document.activeElement)) { pickClose(pick, true); return; }
    q.setAttribute("aria-expanded", String(pickOptions(pick).length > 0));
  });

  // names offers the nodes' names to the edges' from and to.
  function names() {
    var list = document.getElementById("wf-node-names");
    if (!list) { return; }
    list.textContent = "";
    document.querySelectorAll('input[name="node_name"]').forEach(function (i) {
      if (i.value.trim()) { var o = document.createElement("option"); o.value = i.value.trim(); list.appendChild(o); }
    });
  }

  document.addEventListener("click", function (e) {
    var opt = e.target.closest && e.target.closest(".wf-pick-opt");
    if (opt) { pickJob(opt); return; }
    var b = e.target.closest && e.target.closest("[data-add-row]");
    if (!b) { return; }
    var c = document.getElementById(b.getAttribute("data-add-row"));
    if (c) { addRow(c); }
  });
  document.addEventListener("change", function (e) {
    if (e.target.name === "node_kind") { kinds(document); }
  });
  document.addEventListener("input", function (e) {
    if (e.target.name === "node_name") { names(); }
  });
  document.body.addEventListener("htmx:load", function (e) { drawAll(e.detail.elt); });
  var resized;
  window.addEventListener("resize", function () {
    clearTimeout(resized);
    resized = setTimeout(function () { drawAll(document); }, 200);
  });
  // A search typed into a job picker is not a change of the workflow: the preview is not asked.
  var nodeRows = document.getElementById("wf-node-rows");
  if (nodeRows) {
    ["input", "change"].forEach(function (t) {
      nodeRows.addEventListener(t, function (e) { if (e.target.name === "job_q") { e.stopPropagation(); } });
    });
  }
  kinds(document);
  drawAll(document);
})();
