/* Explorables of "The Transformer" book: plain JavaScript and SVG, no framework, no network.
   Each <div class="tl-explorable" data-kind="..."> carries its data (computed by the book's
   Python library at build time) in a JSON script element. This script draws the figure,
   shows it and hides the static figure next to it; without JavaScript the static one stays. */
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var uid = 0;

  function el(tag, attrs, parent, text) {
    var node = tag.indexOf("svg:") === 0 ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
    for (var k in attrs || {}) node.setAttribute(k, attrs[k]);
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }
  function fmt(x, digits) { return (x < 0 ? "\u2212" : "") + Math.abs(x).toFixed(digits === undefined ? 2 : digits); }
  function vec(v) { return "[" + v.map(function (x) { return fmt(x); }).join(", ") + "]"; }

  /* A bar chart in an SVG: values in [lo, hi], one bar each; returns a function to update it. */
  function bars(parent, n, lo, hi, title, labels) {
    var w = 320, h = 120, pad = 4, bw = (w - 2 * pad) / n;
    var svg = el("svg:svg", { viewBox: "0 0 " + w + " " + (h + 18), class: "tl-bars", role: "img", "aria-label": title }, parent);
    var y0 = pad + (hi / (hi - lo)) * (h - 2 * pad);
    el("svg:line", { x1: 0, x2: w, y1: y0, y2: y0, class: "tl-axis" }, svg);
    var rects = [];
    for (var i = 0; i < n; i++) {
      rects.push(el("svg:rect", { x: pad + i * bw + bw * 0.12, width: bw * 0.76, y: y0, height: 0, class: "tl-bar" }, svg));
      if (labels) el("svg:text", { x: pad + (i + 0.5) * bw, y: h + 14, class: "tl-tick" }, svg, labels[i]);
    }
    return function (values, highlight) {
      values.forEach(function (v, i) {
        var y = pad + ((hi - Math.max(lo, Math.min(hi, v))) / (hi - lo)) * (h - 2 * pad);
        rects[i].setAttribute("y", Math.min(y, y0));
        rects[i].setAttribute("height", Math.abs(y - y0));
        rects[i].setAttribute("class", "tl-bar" + (i === highlight ? " tl-bar-hi" : ""));
      });
    };
  }

  function attention(root, d) {
    var T = d.tokens.length;
    var table = el("table", { class: "tl-heat" }, el("div", { class: "tl-scroll" }, root));
    el("caption", {}, table, "Attention weights: rows are queries, columns keys. Pick a query token.");
    var head = el("tr", {}, el("thead", {}, table));
    el("th", { scope: "col" }, head, "query \u2193 key \u2192");
    d.tokens.forEach(function (t) { el("th", { scope: "col" }, head, t); });
    var body = el("tbody", {}, table), rows = [], buttons = [];
    d.tokens.forEach(function (t, i) {
      var tr = el("tr", {}, body);
      var b = el("button", { type: "button", "aria-pressed": "false", "data-row": i,
        "aria-label": t + " " + i + ", query at position " + i }, el("th", { scope: "row" }, tr), t + " ");
      el("small", {}, b, String(i));
      buttons.push(b);
      d.weights[i].forEach(function (w, j) {
        el("td", { style: "background:" + d.colours[i][j] + ";color:" + d.ink[i][j] }, tr, fmt(w));
      });
      rows.push(tr);
      tr.addEventListener("pointerenter", function () { show(i); });
      b.addEventListener("click", function () { show(i); });
      b.addEventListener("focus", function () { show(i); });
    });
    var panel = el("div", { class: "tl-panel", "aria-live": "polite" }, root);
    var title = el("p", { class: "tl-title" }, panel);
    var vmax = Math.max.apply(null, d.weights.map(function (r) { return Math.max.apply(null, r); }));
    var update = bars(panel, T, 0, vmax, "the chosen query's weights, one bar per key (scale: the largest weight)", d.tokens);
    var sum = el("p", { class: "tl-sum" }, panel);
    var outp = el("p", { class: "tl-out" }, panel);
    function show(i) {
      rows.forEach(function (r, k) { r.classList.toggle("tl-row-hi", k === i); });
      buttons.forEach(function (b, k) { b.setAttribute("aria-pressed", String(k === i)); });
      root.setAttribute("data-row", i);
      title.textContent = "Query \u201c" + d.tokens[i] + "\u201d (row " + i + "): its weights on the keys";
      update(d.weights[i], -1);
      sum.textContent = "output = " + d.weights[i].map(function (w, j) { return fmt(w) + "\u00b7v(" + d.tokens[j] + ")"; }).join(" + ");
      outp.textContent = "= " + vec(d.output[i]);
    }
    show(1 < T ? 1 : 0);
  }

  function dk(root, d) {
    var n = d.d_ks.length, id = "tl-dk-" + (++uid);
    var ctl = el("div", { class: "tl-control" }, root);
    el("label", { for: id }, ctl, "d_k");
    var input = el("input", { type: "range", id: id, min: 0, max: n - 1, step: 1, value: Math.min(2, n - 1) }, ctl);
    var shown = el("output", { for: id, class: "tl-value" }, ctl);
    var keys = d.unscaled[0].map(function (_, j) { return "k" + j; });
    var grid = el("div", { class: "tl-two" }, root);
    var a = el("div", {}, grid), b = el("div", {}, grid);
    var ta = el("p", { class: "tl-title" }, a, "softmax(q\u00b7k) \u2014 unscaled");
    var ua = bars(a, keys.length, 0, 1, "weights without scaling, one bar per key", keys);
    var ma = el("p", { class: "tl-max tl-max-unscaled" }, a);
    el("p", { class: "tl-title" }, b, "softmax(q\u00b7k / \u221ad_k) \u2014 scaled");
    var ub = bars(b, keys.length, 0, 1, "weights with scaling, one bar per key", keys);
    var mb = el("p", { class: "tl-max tl-max-scaled" }, b);
    var live = el("p", { class: "tl-live", "aria-live": "polite" }, root);
    function argmax(v) { return v.indexOf(Math.max.apply(null, v)); }
    function show() {
      var i = +input.value, u = d.unscaled[i], s = d.scaled[i];
      shown.textContent = "d_k = " + d.d_ks[i];
      input.setAttribute("aria-valuetext", "d_k = " + d.d_ks[i]);
      root.setAttribute("data-dk", d.d_ks[i]);
      ua(u, argmax(u)); ub(s, argmax(s));
      ma.textContent = "largest weight " + fmt(Math.max.apply(null, u)) + "; mean over " + d.n_queries +
        " queries " + fmt(d.mean_max_unscaled[i]);
      mb.textContent = "largest weight " + fmt(Math.max.apply(null, s)) + "; mean over " + d.n_queries +
        " queries " + fmt(d.mean_max_scaled[i]);
      live.textContent = "At d_k = " + d.d_ks[i] + " the largest of " + u.length + " weights is, on average, " +
        fmt(d.mean_max_unscaled[i]) + " without scaling and " + fmt(d.mean_max_scaled[i]) + " with it.";
    }
    input.addEventListener("input", show);
    show();
  }

  function pe(root, d) {
    var T = d.pe.length, D = d.pe[0].length, id = "tl-pe-" + (++uid);
    var ctl = el("div", { class: "tl-control" }, root);
    el("label", { for: id }, ctl, "position");
    var input = el("input", { type: "range", id: id, min: 0, max: T - 1, step: 1, value: d.position }, ctl);
    var shown = el("output", { for: id, class: "tl-value" }, ctl);
    el("p", { class: "tl-title" }, root, "its encoding: one bar per dimension (even: sin, odd: cos)");
    var ue = bars(root, D, -1, 1, "the encoding of the chosen position, one bar per dimension");
    el("p", { class: "tl-title" }, root, "its dot product with every position j: PE[pos]\u00b7PE[j]");
    var w = 320, h = 120, lo = Infinity, hi = -Infinity;
    d.similarity.forEach(function (r) { r.forEach(function (v) { lo = Math.min(lo, v); hi = Math.max(hi, v); }); });
    lo = Math.min(0, lo);
    var svg = el("svg:svg", { viewBox: "0 0 " + w + " " + (h + 18), class: "tl-line", role: "img",
      "aria-label": "dot product of the chosen position's encoding with every position's" }, root);
    function sx(j) { return 4 + j * (w - 8) / (T - 1); }
    function sy(v) { return 4 + (hi - v) / (hi - lo) * (h - 8); }
    el("svg:line", { x1: 0, x2: w, y1: sy(0), y2: sy(0), class: "tl-axis" }, svg);
    var path = el("svg:path", { class: "tl-path" }, svg);
    var dot = el("svg:circle", { r: 4, class: "tl-dot" }, svg);
    [0, Math.floor((T - 1) / 2), T - 1].forEach(function (j, n) {
      el("svg:text", { x: sx(j), y: h + 14, class: "tl-tick", "text-anchor": ["start", "middle", "end"][n] }, svg, "j = " + j);
    });
    el("svg:text", { x: 6, y: sy(hi) + 12, class: "tl-tick", "text-anchor": "start" }, svg, fmt(hi, 0));
    el("svg:text", { x: 6, y: sy(0) - 4, class: "tl-tick", "text-anchor": "start" }, svg, "0");
    var live = el("p", { class: "tl-live", "aria-live": "polite" }, root);
    function show() {
      var p = +input.value, s = d.similarity[p];
      shown.textContent = "pos = " + p;
      input.setAttribute("aria-valuetext", "position " + p);
      root.setAttribute("data-position", p);
      ue(d.pe[p], -1);
      path.setAttribute("d", s.map(function (v, j) { return (j ? "L" : "M") + sx(j).toFixed(1) + " " + sy(v).toFixed(1); }).join(""));
      dot.setAttribute("cx", sx(p)); dot.setAttribute("cy", sy(s[p]));
      var best = -1, bj = -1;
      s.forEach(function (v, j) { if (j !== p && v > best) { best = v; bj = j; } });
      live.textContent = "Position " + p + ": PE[" + p + "]\u00b7PE[" + p + "] = " + fmt(s[p]) +
        "; the most similar other position is " + bj + " (" + fmt(best) + ")" +
        (p > 0 ? "; position 0 gives " + fmt(s[0]) : "") + ".";
    }
    input.addEventListener("input", show);
    show();
  }

  var KINDS = { attention: attention, dk: dk, pe: pe };
  function init() {
    document.querySelectorAll(".tl-explorable:not([data-ready])").forEach(function (root) {
      var draw = KINDS[root.getAttribute("data-kind")];
      var data = root.querySelector("script.tl-data");
      if (!draw || !data) return;
      draw(root, JSON.parse(data.textContent).data);
      root.setAttribute("data-ready", "");
      root.hidden = false;
      var stat = root.parentNode.querySelector(".tl-static");
      if (stat) stat.classList.add("tl-replaced");
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init); else init();
})();
