/* The language-model page's prompt box: the character model trained when the book was
 * built writes a continuation of the reader's prompt, in the page, offline.
 *
 * It fills every <div class="charlm" data-model="...json" data-bytes="N"> on the page
 * (written by book_build.web_export.charlm_box): the weights (charlm.json +
 * charlm.bin, exported by the same build) are fetched from the site itself only when the
 * reader clicks "Write"; the forward pass is nn.js. Without JavaScript the box stays
 * hidden and the page's printed samples and figures are what the reader sees.
 *
 * API (what the widget uses, and what the browser tests call):
 *   window.transformerLessons.charlm.load()          -> Promise of undefined, once the model is in
 *   window.transformerLessons.charlm.vocab           -> the characters, in id order (after load)
 *   window.transformerLessons.charlm.probs(prompt, {temperature, topK, topP})
 *       -> Promise of an Array (V) of next-character probabilities; rejects with a clear
 *          Error on an empty prompt or characters outside the vocabulary. Only the last
 *          `context` characters are read, as the model was trained.
 *   window.transformerLessons.charlm.forward(ids)    -> {logits (V) of the last position,
 *          attentions[layer][head]: Float32Array (T * T)} (after load)
 */
(function () {
  "use strict";
  if (window.transformerLessons && window.transformerLessons.charlm) return; // included twice: run once
  const TL = (window.transformerLessons = window.transformerLessons || {});
  const nn = TL.nn;
  const LENGTH = 200; // characters written per click, unless stopped

  let model = null, loading = null, modelUrl = null;

  function fetchModel(url, onProgress) {
    return fetch(url).then((r) => {
      if (!r.ok) throw new Error(`the model's description could not be loaded (HTTP ${r.status})`);
      return r.json();
    }).then((doc) => {
      const bin = new URL(url.replace(/\.json$/, ".bin"), document.baseURI);
      return fetch(bin).then(async (r) => {
        if (!r.ok) throw new Error(`the model's weights could not be loaded (HTTP ${r.status})`);
        const total = Number(r.headers.get("Content-Length")) || doc.values * 4;
        const reader = r.body.getReader(), buf = new Uint8Array(doc.values * 4);
        let got = 0;
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          buf.set(value, got);
          got += value.length;
          if (onProgress) onProgress(got, total);
        }
        if (got !== doc.values * 4) throw new Error(`the weights file has ${got} bytes, expected ${doc.values * 4}`);
        return build(doc, new Float32Array(buf.buffer));
      });
    });
  }

  function build(doc, flat) {
    const c = doc.config, w = nn.views(doc.tensors, flat);
    const blocks = [];
    for (let l = 0; l < c.num_layers; l++) {
      const p = (n) => w[`blocks.${l}.${n}`];
      blocks.push({
        attn: { q_w: p("self_attn.q_proj.weight"), q_b: p("self_attn.q_proj.bias"),
                k_w: p("self_attn.k_proj.weight"), k_b: p("self_attn.k_proj.bias"),
                v_w: p("self_attn.v_proj.weight"), v_b: p("self_attn.v_proj.bias"),
                o_w: p("self_attn.out_proj.weight"), o_b: p("self_attn.out_proj.bias") },
        n1: [p("norm1.weight"), p("norm1.bias")], n2: [p("norm2.weight"), p("norm2.bias")],
        l1: [p("linear1.weight"), p("linear1.bias")], l2: [p("linear2.weight"), p("linear2.bias")],
      });
    }
    const index = new Map(doc.vocab.map((ch, i) => [ch, i]));
    return { c, w, blocks, vocab: doc.vocab, index };
  }

  // The state of one sequence: every layer's cached keys and values (context rows of
  // d_model) and every head's attention rows (context x context), as CharLM.step and
  // KVCache in language_model.py and decoder.py. Rows of earlier positions never change:
  // the attention is causal.
  function newState() {
    const c = model.c, C = c.context, d = c.d_model;
    return { t: 0, ids: [], layers: model.blocks.map(() => ({ k: new Float32Array(C * d), v: new Float32Array(C * d),
      rows: [...Array(c.num_heads)].map(() => new Float32Array(C * C)) })) };
  }

  // CharLM.step: the logits (V) for the next character after appending `id` at position state.t
  function step(state, id) {
    const m = model, c = m.c, d = c.d_model, C = c.context, t = state.t, eps = c.layer_norm_eps;
    if (t >= C) throw new Error(`the cache is full: ${t} positions, context ${C}`);
    const x = new Float32Array(d);
    for (let i = 0; i < d; i++) x[i] = m.w["embed.weight"][id * d + i] + m.w.pe[t * d + i];
    m.blocks.forEach((b, l) => { // pre-norm blocks: x + Sublayer(LayerNorm(x))
      const L = state.layers[l], a = b.attn, h = nn.layerNorm(x, 1, d, b.n1[0], b.n1[1], eps);
      L.k.set(nn.linear(h, 1, d, a.k_w, a.k_b, d), t * d);
      L.v.set(nn.linear(h, 1, d, a.v_w, a.v_b, d), t * d);
      const att = nn.attendOne(nn.linear(h, 1, d, a.q_w, a.q_b, d), L.k, L.v, t + 1, d, c.num_heads);
      att.weights.forEach((w, hd) => L.rows[hd].set(w, t * C));
      nn.add(x, nn.linear(att.out, 1, d, a.o_w, a.o_b, d));
      const f = nn.relu(nn.linear(nn.layerNorm(x, 1, d, b.n2[0], b.n2[1], eps), 1, d, b.l1[0], b.l1[1], c.d_ff));
      nn.add(x, nn.linear(f, 1, c.d_ff, b.l2[0], b.l2[1], d));
    });
    state.t++;
    state.ids.push(id);
    return nn.linear(nn.layerNorm(x, 1, d, m.w["norm.weight"], m.w["norm.bias"], eps), 1, d, m.w["head.weight"], m.w["head.bias"], c.vocab_size);
  }

  // the attention of head hd of layer l over the state's positions: (T, T), zeros above the diagonal
  function attention(state, l, hd) {
    const C = model.c.context, T = state.t, rows = state.layers[l].rows[hd], out = new Float32Array(T * T);
    for (let i = 0; i < T; i++) out.set(rows.subarray(i * C, i * C + i + 1), i * T);
    return out;
  }

  // CharLM.forward for one sequence ids (T <= context): the logits of its last position and
  // attentions[layer][head] (T * T), computed position by position with the cache
  function forward(ids) {
    const state = newState();
    let logits = null;
    for (const id of ids) logits = step(state, id);
    return { logits, attentions: model.blocks.map((_, l) => [...Array(model.c.num_heads).keys()].map((h) => attention(state, l, h))) };
  }

  // next_token_probs of language_model.py: softmax(logits / temperature), top-k, then top-p
  function nextProbs(logits, opts) {
    const { temperature = 1, topK = null, topP = null } = opts || {};
    const V = logits.length;
    if (!(temperature > 0)) throw new Error(`the temperature must be a number above 0, not ${temperature}`);
    if (topK !== null && !(Number.isInteger(topK) && topK >= 1 && topK <= V))
      throw new Error(`top-k must be a whole number from 1 to ${V}, not ${topK}`);
    if (topP !== null && !(topP > 0 && topP <= 1)) throw new Error(`top-p must be above 0 and at most 1, not ${topP}`);
    const p = nn.softmaxRow(Float64Array.from(logits, (z) => z / temperature), V);
    if (topK === null && topP === null) return Array.from(p);
    const order = [...p.keys()].sort((a, b) => p[b] - p[a] || a - b); // likeliest first, ties: lower id
    const kept = new Float64Array(V);
    let before = 0, sum = 0;
    order.forEach((id, rank) => {
      if ((topK === null || rank < topK) && (topP === null || before < topP)) { kept[id] = p[id]; sum += p[id]; }
      before += p[id];
    });
    return Array.from(kept, (v) => v / sum);
  }

  // the ids of a prompt, or a clear Error
  function encode(prompt) {
    if (typeof prompt !== "string" || prompt.length === 0) throw new Error("Type a prompt first: the model continues the text you give it.");
    const chars = Array.from(prompt);
    const unknown = [...new Set(chars.filter((ch) => !model.index.has(ch)))];
    if (unknown.length) {
      const shown = unknown.slice(0, 8).map((ch) => JSON.stringify(ch)).join(", ");
      throw new Error(`The model has never seen ${unknown.length === 1 ? "this character" : "these characters"}: ` +
        `${shown}${unknown.length > 8 ? ` and ${unknown.length - 8} more` : ""}. It knows only the ${model.vocab.length} ` +
        "characters of its training text (English letters, digits, punctuation, spaces and newlines); remove or replace them.");
    }
    return chars.map((ch) => model.index.get(ch)).slice(-model.c.context);
  }

  function load(onProgress) {
    if (model) return Promise.resolve(model);
    if (!loading) {
      if (!modelUrl) return Promise.reject(new Error("no language model on this page"));
      loading = fetchModel(modelUrl, onProgress).then((m) => { model = m; api.vocab = m.vocab; api.context = m.c.context; return m; },
        (e) => { loading = null; throw e; });
    }
    return loading;
  }

  const api = (TL.charlm = {
    vocab: null, context: null, load: (onProgress) => load(onProgress).then(() => undefined), forward: (ids) => forward(ids), nextProbs, lastRate: null,
    probs: (prompt, opts) => load().then(() => nextProbs(forward(encode(prompt)).logits, opts)),
  });

  // --- the widget --------------------------------------------------------------------------

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function field(id, label, input, hint) {
    const wrap = el("span", { class: "charlm-field" });
    wrap.append(el("label", { for: id }, label), input);
    if (hint) wrap.append(el("span", { class: "charlm-hint", id: id + "-hint" }, hint));
    if (hint) input.setAttribute("aria-describedby", id + "-hint");
    return wrap;
  }

  function init(box, n) {
    const colours = JSON.parse(box.querySelector("script.charlm-data").textContent).colours;
    const id = (s) => `charlm${n}-${s}`, kb = Math.round(Number(box.dataset.bytes) / 1024);
    const prompt = el("textarea", { id: id("prompt"), rows: "3", spellcheck: "false" });
    prompt.value = box.dataset.prompt || "The ";
    const temp = el("input", { id: id("temp"), type: "number", min: "0.1", max: "3", step: "0.1", value: "0.8", inputmode: "decimal" });
    const topK = el("input", { id: id("topk"), type: "number", min: "0", step: "1", value: "0", inputmode: "numeric" });
    const topP = el("input", { id: id("topp"), type: "number", min: "0.05", max: "1", step: "0.05", value: "0.95", inputmode: "decimal" });
    const layer = el("select", { id: id("layer") }), head = el("select", { id: id("head") });
    const L = Number(box.dataset.layers), H = Number(box.dataset.heads);
    for (let i = 0; i < L; i++) layer.append(el("option", { value: String(i) }, String(i)));
    for (let i = 0; i < H; i++) head.append(el("option", { value: String(i) }, String(i)));
    const write = el("button", { type: "button", class: "charlm-write" }, `Load the model (${kb} KB) and write`);
    const stop = el("button", { type: "button", class: "charlm-stop", disabled: "" }, "Stop");
    const progress = el("progress", { max: "1", value: "0", hidden: "", "aria-label": "Loading the model" });
    const message = el("p", { class: "charlm-message", role: "status" });
    const out = el("p", { class: "charlm-output", "aria-live": "off" });
    const canvas = el("canvas", { class: "charlm-attention", width: "256", height: "256", role: "img",
      "aria-label": "Causal attention of the chosen layer and head; it appears as the model writes." });
    const caption = el("p", { class: "charlm-caption" });

    const prompts = el("div", { class: "charlm-row charlm-prompt-row" });
    prompts.append(field(id("prompt"), "Prompt", prompt));
    const knobs = el("div", { class: "charlm-row charlm-knobs" });
    knobs.append(field(id("temp"), "Temperature", temp), field(id("topk"), "Top-k", topK, "0 = all"),
      field(id("topp"), "Top-p", topP, "1 = all"), field(id("layer"), "Layer", layer), field(id("head"), "Head", head));
    const buttons = el("div", { class: "charlm-row charlm-actions" });
    buttons.append(write, stop, progress);
    const view = el("div", { class: "charlm-view" });
    const figure = el("div", { class: "charlm-figure" });
    figure.append(canvas, caption);
    view.append(out, figure);
    box.append(prompts, knobs, buttons, message, view);
    box.hidden = false;

    let running = false, stopAsked = false, last = null;

    function options() {
      const t = Number(temp.value), k = Number(topK.value), p = Number(topP.value);
      if (temp.value.trim() === "" || !(t > 0)) throw new Error("The temperature must be a number above 0 (1 = the model's own probabilities).");
      if (topK.value.trim() === "" || !Number.isInteger(k) || k < 0) throw new Error("Top-k must be a whole number (0 keeps every character).");
      if (topP.value.trim() === "" || !(p > 0 && p <= 1)) throw new Error("Top-p must be above 0 and at most 1 (1 keeps every character).");
      return { temperature: t, topK: k === 0 ? null : Math.min(k, model.vocab.length), topP: p === 1 ? null : p };
    }

    function draw() {
      if (!last) return;
      const ctx = canvas.getContext("2d"), W = canvas.width, T = last.t;
      const a = attention(last, Number(layer.value), Number(head.value)), s = W / T;
      const chars = last.ids.map((i) => model.vocab[i]);
      ctx.clearRect(0, 0, W, W);
      for (let i = 0; i < T; i++)
        for (let j = 0; j <= i; j++) { // above the diagonal: masked, nothing to draw
          ctx.fillStyle = colours[Math.min(255, Math.round(a[i * T + j] * 255))];
          ctx.fillRect(j * s, i * s, Math.ceil(s), Math.ceil(s));
        }
      const row = a.subarray((T - 1) * T), top = [...row.keys()].sort((x, y) => row[y] - row[x]).slice(0, 3);
      const show = (j) => JSON.stringify(chars[j]);
      caption.textContent = `Layer ${layer.value}, head ${head.value}, over the last ${T} characters (rows: the ` +
        `character that attends, columns: the ones it sees; brighter = more weight). The newest one attends most to ` +
        top.map((j) => `${show(j)} (${row[j].toFixed(2)})`).join(", ") + ".";
      canvas.setAttribute("aria-label", `Causal attention heatmap. ${caption.textContent}`);
    }

    function finish(text) {
      running = false;
      write.disabled = false;
      stop.disabled = true;
      write.textContent = "Write";
      if (text) message.textContent = text;
    }

    async function run() {
      message.textContent = "";
      if (!model) {
        progress.hidden = false;
        write.disabled = true;
        message.textContent = `Loading the model (${kb} KB) from this site...`;
        try {
          await load((got, total) => { progress.value = got / total; });
        } catch (e) {
          progress.hidden = true;
          finish(`The model could not be loaded: ${e.message}`);
          return;
        }
        progress.hidden = true;
        message.textContent = "";
      }
      let ids, opts;
      try {
        ids = encode(prompt.value);
        opts = options();
      } catch (e) {
        finish(e.message);
        return;
      }
      const chars = Array.from(prompt.value);
      if (chars.length > model.c.context)
        message.textContent = `The model reads only the last ${model.c.context} characters (its context); it continues from "${chars.slice(-model.c.context).join("")}".`;
      running = true;
      stopAsked = false;
      write.disabled = true;
      stop.disabled = false;
      out.replaceChildren(el("span", { class: "charlm-prompt" }, chars.slice(-model.c.context).join("")));
      const written = el("span", { class: "charlm-written" });
      out.append(written);
      let text = "", state = newState(), logits = null;
      const C = model.c.context;
      for (const id of ids) logits = step(state, id); // read the prompt (its last `context` characters)
      const started = performance.now();
      for (let n = 0; n < LENGTH && !stopAsked; n++) {
        const p = nextProbs(logits, opts);
        let u = Math.random(), next = -1;
        for (let i = 0; i < p.length && next < 0; i++) { u -= p[i]; if (u < 0 && p[i] > 0) next = i; }
        if (next < 0) next = p.indexOf(Math.max(...p)); // rounding left u >= 0: the likeliest
        text += model.vocab[next];
        written.textContent = text;
        if (state.t === C) { // the context is full: read the last half again, from position 0
          const keep = state.ids.slice(C / 2);
          state = newState();
          for (const id of keep) step(state, id);
        }
        logits = step(state, next);
        last = state;
        draw();
        await new Promise((r) => setTimeout(r, 0)); // let the page breathe: Stop, scrolling, typing
      }
      const seconds = (performance.now() - started) / 1000;
      api.lastRate = text.length / seconds; // characters per second, read by the benchmark
      finish(`${stopAsked ? "Stopped after" : "Wrote"} ${text.length} characters (${api.lastRate.toFixed(0)} a second).`);
    }

    write.addEventListener("click", () => { if (!running) run(); });
    stop.addEventListener("click", () => { stopAsked = true; });
    layer.addEventListener("change", draw);
    head.addEventListener("change", draw);
  }

  nn.startBoxes("charlm", (box, n, url) => { modelUrl = url; init(box, n); });
})();
