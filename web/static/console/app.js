// Sundial console: the little behaviour the server-rendered pages need. No build step; the
// Content-Security-Policy allows only this file and the vendored libraries.
(function () {
  "use strict";

  function csrf() {
    var m = document.querySelector('meta[name="csrf-token"]');
    return m ? m.content : "";
  }

  // Every htmx request carries the CSRF token.
  document.addEventListener("htmx:configRequest", function (e) {
    e.detail.headers["X-CSRF-Token"] = csrf();
  });

  // Times are rendered in UTC, labelled. The reader chooses the zone they are shown in: the
  // browser's (the default), UTC, or each job's (a time of a job's trigger carries its zone in
  // data-zone; one without shows in the browser's). Every time shown names its zone; the
  // tooltip keeps UTC.
  var ZONE_KEY = "sundial.zone";
  function zonePref() {
    try { return localStorage.getItem(ZONE_KEY) || "browser"; } catch (e) { return "browser"; }
  }
  var formats = {};
  function formatIn(zone, isShort) {
    var k = (zone || "") + (isShort ? "|s" : "|f");
    if (!formats[k]) {
      var o = isShort ? { month: "short", day: "numeric", hour: "numeric", minute: "2-digit", second: "2-digit" }
        : { year: "numeric", month: "short", day: "numeric", hour: "numeric", minute: "2-digit", second: "2-digit" };
      o.timeZoneName = "short";
      if (zone) o.timeZone = zone;
      try { formats[k] = new Intl.DateTimeFormat(undefined, o); } catch (e) { delete o.timeZone; formats[k] = new Intl.DateTimeFormat(undefined, o); }
    }
    return formats[k];
  }
  function localTimes(root) {
    var pref = zonePref();
    root.querySelectorAll("time[datetime]").forEach(function (t) {
      var d = new Date(t.getAttribute("datetime"));
      if (isNaN(d)) return;
      if (!t.hasAttribute("data-utc")) t.setAttribute("data-utc", t.textContent);
      var zone = pref === "utc" ? "UTC" : pref === "job" ? (t.getAttribute("data-zone") || "") : "";
      t.title = t.getAttribute("data-utc");
      t.textContent = formatIn(zone, t.hasAttribute("data-short")).format(d);
      t.setAttribute("data-local", pref);
    });
  }
  function zonePicker() {
    var sel = document.getElementById("zone-pref");
    if (!sel) return;
    sel.value = zonePref();
    sel.addEventListener("change", function () {
      try { localStorage.setItem(ZONE_KEY, sel.value); } catch (e) { /* private mode: this page only */ }
      localTimes(document);
    });
  }

  // Forms that destroy something ask first.
  document.addEventListener("submit", function (e) {
    var msg = e.target.getAttribute && e.target.getAttribute("data-confirm");
    if (msg && !window.confirm(msg)) e.preventDefault();
  });

  // A button with data-dialog opens that dialog as a modal; a dialog the server sent open
  // (a refused run, its error at the field) becomes modal too, with its field focused.
  document.addEventListener("click", function (e) {
    var b = e.target.closest && e.target.closest("[data-dialog]");
    if (!b) return;
    var d = document.getElementById(b.getAttribute("data-dialog"));
    if (d && d.showModal) {
      d.showModal();
      var f = d.querySelector("textarea, input:not([type=hidden])");
      if (f) f.focus();
    }
  });
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("dialog[data-modal][open]").forEach(function (d) {
      d.close();
      d.showModal();
      var f = d.querySelector("[aria-invalid=true]");
      if (f) f.focus();
    });
  });

  // The editor shows the fields of the chosen trigger kind.
  document.addEventListener("change", function (e) {
    var el = e.target;
    if (el.name && /(^|\.)kind$/.test(el.name) && el.form) el.form.setAttribute("data-kind", el.value);
  });

  function css(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }
  function day(d) { return d.toISOString().slice(0, 10); }
  // The charts' x axes tick at whole days only.
  var DAYS = [86400, 2 * 86400, 7 * 86400, 14 * 86400];

  // Stacked bars drawn tallest first, so each outcome shows as its own band.
  function stackedBars(el, legendEl, days, rows) {
    var outcomes = [
      { key: "succeeded", label: "succeeded", color: css("--ok") },
      { key: "failed", label: "failed", color: css("--bad") },
      { key: "running", label: "not finished", color: css("--live") },
      { key: "other", label: "skipped or canceled", color: css("--muted") }
    ];
    var xs = rows.map(function (r) { return Date.parse(r.day + "T00:00:00Z") / 1000; });
    var acc = rows.map(function () { return 0; });
    var stacks = outcomes.map(function (o) {
      acc = acc.map(function (v, i) { return v + rows[i][o.key]; });
      return acc.slice();
    });
    var data = [xs];
    var series = [{}];
    for (var i = outcomes.length - 1; i >= 0; i--) {
      data.push(stacks[i]);
      series.push({ label: outcomes[i].label, fill: outcomes[i].color, stroke: outcomes[i].color, width: 0,
        paths: uPlot.paths.bars({ size: [0.7, 40] }), points: { show: false } });
    }
    var grid = { stroke: css("--line"), width: 1 };
    var opts = {
      width: Math.max(el.clientWidth, 200), height: 240, legend: { show: false }, cursor: { show: false },
      scales: { x: { time: true, range: function (u, min, max) { return [min - 43200, max + 43200]; } },
        y: { range: function (u, min, max) { return [0, Math.max(4, max * 1.1)]; } } },
      axes: [{ stroke: css("--muted"), grid: { show: false }, ticks: grid, space: 44, incrs: DAYS,
          values: function (u, vals) { return vals.map(function (v) { var d = new Date(v * 1000); return (d.getUTCMonth() + 1) + "/" + d.getUTCDate(); }); } },
        { stroke: css("--muted"), grid: grid, ticks: grid, size: 48 }],
      series: series
    };
    el.innerHTML = "";
    var plot = new uPlot(opts, data, el);
    var totals = outcomes.map(function (o) { return rows.reduce(function (s, r) { return s + r[o.key]; }, 0); });
    legendEl.innerHTML = "";
    outcomes.forEach(function (o, i) {
      var s = document.createElement("span");
      var sw = document.createElement("i");
      sw.style.background = o.color;
      s.appendChild(sw);
      s.appendChild(document.createTextNode(o.label + ": " + totals[i]));
      legendEl.appendChild(s);
    });
    // The success ratio of the period, as XXL-JOB's report has it: of the runs that ended
    // succeeded or failed (skipped and canceled ones neither).
    var ok = totals[0], bad = totals[1];
    var ratio = ok + bad ? (100 * ok / (ok + bad)).toFixed(1) + "%" : "–";
    var r = document.createElement("span");
    r.id = "legend-ratio";
    r.textContent = "success ratio: " + ratio;
    legendEl.appendChild(r);
    var stat = document.getElementById("success-ratio");
    if (stat) {
      stat.textContent = ratio;
      stat.title = ok + " succeeded of " + (ok + bad) + " that succeeded or failed";
      document.getElementById("ratio-days").textContent = String(days);
    }
    el.setAttribute("data-drawn", String(days));
    return plot;
  }

  function loadReport(url, days, job) {
    var to = new Date();
    var from = new Date(to.getTime() - (days - 1) * 86400000);
    var q = "?from=" + day(from) + "&to=" + day(to) + (job ? "&job_id=" + job : "");
    return fetch(url + q, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        if (!r.ok) throw new Error("report: HTTP " + r.status);
        return r.json();
      });
  }

  function dashboardChart() {
    var el = document.getElementById("chart");
    if (!el || typeof uPlot === "undefined") return;
    var legendEl = document.getElementById("chart-legend");
    function draw(days) {
      loadReport(el.getAttribute("data-report"), days).then(function (rep) {
        stackedBars(el, legendEl, days, rep.items);
      }).catch(function (err) { el.textContent = "The chart could not load: " + err.message; });
    }
    document.querySelectorAll("[data-days]").forEach(function (b) {
      b.addEventListener("click", function () {
        document.querySelectorAll("[data-days]").forEach(function (o) { o.setAttribute("aria-pressed", String(o === b)); });
        draw(Number(b.getAttribute("data-days")));
      });
    });
    draw(7);
  }

  // A job's success rate per day (bars) and its recent runs' durations (line, right axis).
  function jobChart() {
    var el = document.getElementById("job-chart");
    if (!el || typeof uPlot === "undefined") return;
    var points = JSON.parse(el.getAttribute("data-points") || "[]");
    loadReport(el.getAttribute("data-report"), 30, el.getAttribute("data-job")).then(function (rep) {
      var xs = rep.items.map(function (r) { return Date.parse(r.day + "T00:00:00Z") / 1000; });
      var rate = rep.items.map(function (r) {
        var done = r.succeeded + r.failed;
        return done ? Math.round(1000 * r.succeeded / done) / 10 : null;
      });
      // Each run's duration is put on its day, averaged, so both series share the x axis.
      var byDay = {};
      points.forEach(function (p) {
        var k = day(new Date(p.t));
        (byDay[k] = byDay[k] || []).push(p.ms);
      });
      var dur = rep.items.map(function (r) {
        var v = byDay[r.day];
        return v ? v.reduce(function (a, b) { return a + b; }, 0) / v.length : null;
      });
      var grid = { stroke: css("--line"), width: 1 };
      el.innerHTML = "";
      new uPlot({
        width: Math.max(el.clientWidth, 200), height: 220, legend: { show: false }, cursor: { show: false },
        scales: { x: { time: true }, pct: { range: [0, 100] }, ms: { range: function (u, min, max) { return [0, Math.max(10, (max || 0) * 1.2)]; } } },
        axes: [{ stroke: css("--muted"), grid: { show: false }, ticks: grid, space: 44, incrs: DAYS,
            values: function (u, vals) { return vals.map(function (v) { var d = new Date(v * 1000); return (d.getUTCMonth() + 1) + "/" + d.getUTCDate(); }); } },
          { scale: "pct", stroke: css("--muted"), grid: grid, ticks: grid, values: function (u, v) { return v.map(function (x) { return x + "%"; }); } },
          { scale: "ms", side: 1, stroke: css("--muted"), grid: { show: false }, ticks: grid, size: 60,
            values: function (u, v) { return v.map(function (x) { return x >= 1000 ? (x / 1000) + " s" : x + " ms"; }); } }],
        series: [{}, { label: "success rate", scale: "pct", fill: css("--ok-fill"), stroke: css("--ok"), width: 0,
            paths: uPlot.paths.bars({ size: [0.7, 30] }), points: { show: false } },
          { label: "mean duration", scale: "ms", stroke: css("--live"), width: 2, spanGaps: true, points: { show: true, size: 5 } }]
      }, [xs, rate, dur], el);
      var legend = document.getElementById("job-chart-legend");
      legend.innerHTML = "";
      [["success rate per day", css("--ok")], ["mean run duration", css("--live")]].forEach(function (l) {
        var s = document.createElement("span"), i = document.createElement("i");
        i.style.background = l[1];
        s.appendChild(i);
        s.appendChild(document.createTextNode(l[0]));
        legend.appendChild(s);
      });
      el.setAttribute("data-drawn", "30");
    }).catch(function (err) { el.textContent = "The chart could not load: " + err.message; });
  }

  // The output of a running execution, followed over the API's server-sent events.
  function outputTail() {
    var pre = document.getElementById("output");
    if (!pre || pre.getAttribute("data-follow") !== "true") return;
    var id = pre.getAttribute("data-execution");
    var status = document.getElementById("tail-status");
    var src = new EventSource("/api/v1/executions/" + id + "/output?follow=true&after=" + pre.getAttribute("data-after"));
    src.addEventListener("line", function (e) {
      var l = JSON.parse(e.data);
      var stick = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
      var ln = document.createElement("span");
      ln.className = "ln";
      ln.textContent = l.line;
      pre.appendChild(ln);
      pre.appendChild(document.createTextNode(l.message + "\n"));
      pre.setAttribute("data-after", l.line);
      if (stick) pre.scrollTop = pre.scrollHeight;
    });
    src.addEventListener("end", function (e) {
      src.close();
      var x = JSON.parse(e.data);
      pre.setAttribute("data-follow", "ended");
      status.textContent = "ended: " + x.state;
      var badge = document.querySelector("#exec-state .badge");
      if (badge) {
        badge.textContent = x.state;
        badge.className = "badge " + (x.state === "succeeded" ? "ok" : (x.state === "failed" || x.state === "timed_out" || x.state === "lost") ? "bad" : "muted");
      }
    });
    src.onerror = function () {
      if (pre.getAttribute("data-follow") === "true") status.textContent = "reconnecting…";
    };
    window.addEventListener("pagehide", function () { src.close(); });
  }

  // Scripts are edited with syntax highlighting; the textarea stays the form's field.
  function scriptEditor(ta) {
    if (ta.cm || typeof CodeMirror === "undefined") return;
    var cm = CodeMirror.fromTextArea(ta, { mode: ta.getAttribute("data-editor"), lineNumbers: true, indentUnit: 2,
      viewportMargin: Infinity, screenReaderLabel: "Script" });
    cm.on("change", function () { cm.save(); });
    ta.cm = cm;
    ta.setAttribute("data-editor-ready", "");
  }

  // The job editor's params are its script when the handler is a script handler: the form
  // switches as the handler is typed (the script-only and params-only fields with it).
  function scriptMode(form) {
    var h = form.elements.handler;
    if (!h) return;
    var names = (form.getAttribute("data-script-handlers") || "").split(" ");
    var on = names.indexOf(h.value.trim().toLowerCase()) >= 0;
    form.setAttribute("data-script", String(on));
    form.querySelectorAll(".script-only input, .script-only textarea").forEach(function (e) { e.disabled = !on; });
    form.querySelectorAll(".params-only input").forEach(function (e) { e.disabled = on; });
    var ta = form.querySelector("textarea[data-editor]");
    if (!ta) return;
    if (on) scriptEditor(ta);
    else if (ta.cm) {
      ta.cm.toTextArea();
      ta.cm = null;
      ta.removeAttribute("data-editor-ready");
    }
  }

  function scriptEditors() {
    document.querySelectorAll("textarea[data-editor]").forEach(function (ta) {
      var form = ta.form;
      if (form && form.hasAttribute("data-script-handlers")) scriptMode(form);
      else scriptEditor(ta);
    });
  }
  document.addEventListener("input", function (e) {
    if (e.target.name === "handler" && e.target.form && e.target.form.hasAttribute("data-script-handlers")) scriptMode(e.target.form);
  });

  function init() {
    zonePicker();
    localTimes(document);
    scriptEditors();
    dashboardChart();
    jobChart();
    outputTail();
  }
  document.addEventListener("htmx:afterSwap", function (e) { localTimes(e.target); });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
