/* Head view: where each token of a sentence attends, in one layer and head of a real model.
 *
 * Plain JavaScript and SVG, no library, no network. It turns every
 * <div class="headview"> on the page into an explorer:
 *   - the data: <script type="application/json" class="headview-data"> inside it, written
 *     when the page was built: {layers, heads, start: {sentence, layer, head},
 *     sentences: [{text, tokens: [..T], weights: base64 of L*H*T*T bytes, weight*255}]};
 *   - the fallback: an <img> of one head drawn by matplotlib, shown when this script does
 *     not run (no JavaScript, the PDF, a notebook), hidden when it does.
 * Left column: the token that attends (a button); right column: the tokens attended to;
 * a line's opacity is the attention weight. Hover, focus or tap a token on the left to see
 * only its lines; click / Enter / Space keeps it selected; arrow keys move between tokens.
 */
(function () {
  "use strict";
  // a page may include this script twice (its head view and the real model's text box): run once
  if (window.transformerLessons && window.transformerLessons.headview) return;
  const SVG = "http://www.w3.org/2000/svg";
  const ROW = 26; // px per token row, the same in both columns and in the SVG

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function decode(b64) {
    const s = atob(b64);
    const out = new Float32Array(s.length);
    for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i) / 255;
    return out;
  }

  function select(id, label, options, value) {
    const wrap = el("span", { class: "headview-control" });
    wrap.append(el("label", { for: id }, label));
    const s = el("select", { id: id });
    options.forEach(([v, text]) => s.append(el("option", { value: String(v) }, text)));
    s.value = String(value);
    wrap.append(s);
    return [wrap, s];
  }

  function init(fig, n) {
    const script = fig.querySelector("script.headview-data");
    if (!script) return;
    const data = JSON.parse(script.textContent);
    const L = data.layers, H = data.heads;
    const sentences = data.sentences.map((s) => ({ ...s, w: decode(s.weights) }));
    const state = { s: data.start.sentence, l: data.start.layer, h: data.start.head, pinned: null, shown: null };
    const id = (name) => `headview${n}-${name}`;

    const controls = el("div", { class: "headview-controls" });
    const [c1, sSel] = select(id("sentence"), "Sentence", sentences.map((s, i) => [i, s.text]), state.s);
    // layers, heads and tokens count from 0, as everywhere in the book (the arrays' indices);
    // option values are those indices, like the state
    const [c2, lSel] = select(id("layer"), "Layer", [...Array(L).keys()].map((i) => [i, String(i)]), state.l);
    const [c3, hSel] = select(id("head"), "Head",
      [["all", "all (mean)"], ...[...Array(H).keys()].map((i) => [i, String(i)])], state.h);
    controls.append(c1, c2, c3);

    const grid = el("div", { class: "headview-grid" });
    const left = el("div", { class: "headview-col headview-from", role: "group", "aria-label": "Tokens that attend" });
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("class", "headview-lines");
    svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("preserveAspectRatio", "none");
    const right = el("div", { class: "headview-col headview-to", "aria-hidden": "true" });
    grid.append(left, svg, right);
    const readout = el("p", { class: "headview-readout", "aria-live": "polite" });
    const ui = el("div", { class: "headview-ui" });
    ui.append(controls, grid, readout);
    fig.insertBefore(ui, fig.firstChild);
    fig.classList.add("headview-ready"); // CSS hides the fallback image

    function weights() {
      // (T, T) weights of the chosen sentence, layer, head (or the mean over heads)
      const s = sentences[state.s], T = s.tokens.length, out = [];
      for (let i = 0; i < T; i++) {
        const row = new Array(T).fill(0);
        const heads = state.h === "all" ? [...Array(H).keys()] : [Number(state.h)];
        for (const h of heads) {
          const base = ((state.l * H + h) * T + i) * T;
          for (let j = 0; j < T; j++) row[j] += s.w[base + j] / heads.length;
        }
        out.push(row);
      }
      return out;
    }

    function headName() {
      return `layer ${state.l}, ${state.h === "all" ? "all heads (mean)" : "head " + Number(state.h)}`;
    }

    function draw() {
      const s = sentences[state.s], T = s.tokens.length, W = weights();
      const focus = state.shown;
      svg.replaceChildren();
      svg.setAttribute("viewBox", `0 0 100 ${T * ROW}`);
      svg.style.height = `${T * ROW}px`;
      for (let i = 0; i < T; i++) {
        if (focus !== null && i !== focus) continue;
        for (let j = 0; j < T; j++) {
          const w = W[i][j];
          if (w < 0.01) continue;
          const line = document.createElementNS(SVG, "line");
          line.setAttribute("x1", "2");
          line.setAttribute("x2", "98");
          line.setAttribute("y1", String(i * ROW + ROW / 2));
          line.setAttribute("y2", String(j * ROW + ROW / 2));
          line.setAttribute("stroke-opacity", String(focus === null ? w * 0.8 : Math.max(w, 0.05)));
          line.setAttribute("stroke-width", focus === null ? "2" : String(1 + 5 * w));
          line.setAttribute("vector-effect", "non-scaling-stroke");
          svg.append(line);
        }
      }
      [...left.children].forEach((b, i) => {
        b.classList.toggle("headview-active", i === focus);
        b.setAttribute("aria-pressed", String(i === state.pinned));
      });
      [...right.children].forEach((t, j) => {
        const w = focus === null ? 0 : W[focus][j];
        t.style.setProperty("--w", String(w));
      });
      if (focus === null) {
        readout.textContent = `${headName()}. Hover, tap or focus a token on the left to see where it attends.`;
      } else {
        const top = [...W[focus].keys()].sort((a, b) => W[focus][b] - W[focus][a]).slice(0, 3);
        readout.textContent = `${headName()}: "${s.tokens[focus]}" (token ${focus}) attends most to ` +
          top.map((j) => `"${s.tokens[j]}" (token ${j}, ${W[focus][j].toFixed(2)})`).join(", ") + ".";
      }
    }

    function show(i) {
      state.shown = i;
      draw();
    }

    function build() {
      const s = sentences[state.s];
      left.replaceChildren();
      right.replaceChildren();
      s.tokens.forEach((tok, i) => {
        const b = el("button", { type: "button", class: "headview-token", "aria-pressed": "false",
          "aria-label": `${tok}, token ${i} (tokens 0 to ${s.tokens.length - 1})` }, tok);
        b.addEventListener("mouseenter", () => show(i));
        b.addEventListener("mouseleave", () => show(state.pinned));
        b.addEventListener("focus", () => show(i));
        b.addEventListener("blur", () => show(state.pinned));
        b.addEventListener("click", () => {
          state.pinned = state.pinned === i ? null : i;
          show(state.pinned === null ? i : state.pinned);
        });
        b.addEventListener("keydown", (e) => {
          const next = { ArrowDown: i + 1, ArrowUp: i - 1, Home: 0, End: s.tokens.length - 1 }[e.key];
          if (next === undefined || next < 0 || next >= s.tokens.length) return;
          e.preventDefault();
          if (state.pinned !== null) state.pinned = next;
          left.children[next].focus();
        });
        left.append(b);
        right.append(el("span", { class: "headview-token headview-target" }, tok));
      });
      state.pinned = null;
      state.shown = null;
      draw();
    }

    sSel.addEventListener("change", () => { state.s = Number(sSel.value); build(); });
    lSel.addEventListener("change", () => { state.l = Number(lSel.value); draw(); });
    hSel.addEventListener("change", () => { state.h = hSel.value === "all" ? "all" : Number(hSel.value); draw(); });
    build();
  }

  // the real-model page's text box (minilm.js) builds a head view for the reader's sentence
  // with the same data format and calls this; n must differ from the page's other head views
  window.transformerLessons = window.transformerLessons || {};
  window.transformerLessons.headview = { init };

  function start() {
    document.querySelectorAll("div.headview").forEach((fig, n) => init(fig, n));
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
