/* The real-model page's text box: all-MiniLM-L6-v2 runs in the page, on the reader's sentence.
 *
 * It fills every <div class="minilm" data-model="...minilm.json" data-bytes="N"> (written by
 * book_build.web_export.minilm_box). Nothing is fetched until the reader clicks
 * "Load the model": then the weights (minilm.bin, int8 and fp16, see web_export.py) and the
 * model's own tokenizer.json come from this site, with a progress bar. The forward pass is
 * nn.js (the book's post-norm encoder layer, BERT's embeddings, GELU); the head view of the
 * sentence is headview.js. Without JavaScript the box stays hidden and the page's figures show.
 *
 * API (what the widget uses, and what the browser tests call):
 *   window.transformerLessons.minilm.load(onProgress)  -> Promise of undefined, once the model is in
 *   window.transformerLessons.minilm.tokenize(text)    -> word pieces with [CLS] and [SEP]
 *       (after load; throws a clear Error on an empty text or more than 64 pieces)
 *   window.transformerLessons.minilm.run(text)
 *       -> Promise of {tokens, attentions[layer][head][query][key], embedding (384, unit length)}
 */
(function () {
  "use strict";
  if (window.transformerLessons && window.transformerLessons.minilm) return; // included twice: run once
  const TL = (window.transformerLessons = window.transformerLessons || {});
  const nn = TL.nn;
  let model = null, loading = null, modelUrl = null;

  // --- WordPiece, as tokenizer.json describes it (BertNormalizer, BertPreTokenizer, WordPiece) ---
  const CONTROL = /\p{C}/u, SPACE = /[\t\n\r ]|\p{Zs}/u, MARK = /\p{Mn}/gu;
  const PUNCT = /[!-\/:-@\[-`{-~]|\p{P}/u;
  function isCJK(cp) {
    return (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0x3400 && cp <= 0x4dbf) || (cp >= 0x20000 && cp <= 0x2a6df) ||
      (cp >= 0x2a700 && cp <= 0x2b73f) || (cp >= 0x2b740 && cp <= 0x2b81f) || (cp >= 0x2b820 && cp <= 0x2ceaf) ||
      (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0x2f800 && cp <= 0x2fa1f);
  }
  function normalize(text) { // clean_text, handle_chinese_chars, strip accents (NFD, drop Mn), lowercase
    let out = "";
    for (const ch of text) {
      const cp = ch.codePointAt(0);
      if (cp === 0 || cp === 0xfffd) continue;
      if (SPACE.test(ch)) out += " ";
      else if (CONTROL.test(ch)) continue;
      else if (isCJK(cp)) out += ` ${ch} `;
      else out += ch;
    }
    return out.normalize("NFD").replace(MARK, "").toLowerCase();
  }
  function words(text) { // split on whitespace, every punctuation character a word of its own
    const out = [];
    let cur = "";
    for (const ch of text) {
      if (/\s/u.test(ch)) { if (cur) out.push(cur); cur = ""; }
      else if (PUNCT.test(ch)) { if (cur) out.push(cur); out.push(ch); cur = ""; }
      else cur += ch;
    }
    if (cur) out.push(cur);
    return out;
  }
  function wordPiece(word, vocab, tk) { // greedy longest match first; one miss: the whole word is [UNK]
    const chars = Array.from(word);
    if (chars.length > tk.max_input_chars_per_word) return [tk.unk_token];
    const pieces = [];
    for (let start = 0; start < chars.length;) {
      let end = chars.length, piece = null;
      while (start < end) {
        const sub = (start > 0 ? tk.continuing_subword_prefix : "") + chars.slice(start, end).join("");
        if (vocab.has(sub)) { piece = sub; break; }
        end--;
      }
      if (piece === null) return [tk.unk_token];
      pieces.push(piece);
      start = end;
    }
    return pieces;
  }
  function tokenize(text) {
    if (typeof text !== "string" || !text.trim()) throw new Error("Type a sentence first: the box is empty.");
    const tk = model.tokenizer, special = model.special;
    const parts = text.split(model.specialSplit); // added tokens ([CLS], [SEP], ...) are matched as typed
    const tokens = ["[CLS]"];
    for (const part of parts) {
      if (special.has(part)) { tokens.push(part); continue; }
      for (const w of words(normalize(part))) tokens.push(...wordPiece(w, model.vocab, tk));
      if (tokens.length > model.max + 1) break; // already too long: no need to read the rest
    }
    tokens.push("[SEP]");
    const pieces = tokens.length - 2;
    if (pieces === 0) throw new Error("There is nothing the model can read in this text (only spaces or control characters).");
    if (pieces > model.max)
      throw new Error(`The sentence is too long for this page: ${tokens.length > model.max + 2 ? "more than " : ""}` +
        `${model.max} word pieces. Shorten it to at most ${model.max} pieces (about ${Math.round(model.max * 0.75)} words); nothing is cut silently.`);
    return tokens;
  }

  // --- the weights: fp16, int8 in groups with fp16 scales, float32 ---
  const F16 = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, f = h & 1023;
    F16[h] = e === 0 ? s * f * 2 ** -24 : e === 31 ? (f ? NaN : s * Infinity) : s * (1 + f / 1024) * 2 ** (e - 15);
  }
  function tensor(buf, spec, group) {
    const n = spec.shape.reduce((a, b) => a * b, 1);
    if (spec.dtype === "f32") return new Float32Array(buf, spec.offset, n);
    const out = new Float32Array(n);
    if (spec.dtype === "f16") {
      const h = new Uint16Array(buf, spec.offset, n);
      for (let i = 0; i < n; i++) out[i] = F16[h[i]];
    } else { // "i8g": out = q * scale, one scale per group of `group` values of a row
      const q = new Int8Array(buf, spec.offset, n), s = new Uint16Array(buf, spec.scales, n / group);
      for (let i = 0; i < n; i++) out[i] = q[i] * F16[s[(i / group) | 0]];
    }
    return out;
  }

  async function fetchAll(url, onProgress) {
    const get = async (u, what) => {
      const r = await fetch(new URL(u, url));
      if (!r.ok) throw new Error(`${what} could not be loaded (HTTP ${r.status})`);
      return r;
    };
    const doc = await (await get("minilm.json", "the model's description")).json();
    const tokenizer = await (await get("tokenizer.json", "the tokenizer")).json();
    const r = await get("minilm.bin", "the model's weights");
    const reader = r.body.getReader(), bytes = new Uint8Array(doc.bytes);
    let got = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (got + value.length > doc.bytes) throw new Error("the weights file is longer than its description says");
      bytes.set(value, got);
      got += value.length;
      if (onProgress) onProgress(got, doc.bytes);
    }
    if (got !== doc.bytes) throw new Error(`the weights file has ${got} bytes, expected ${doc.bytes}`);
    const w = {};
    for (const [name, spec] of Object.entries(doc.tensors)) w[name] = tensor(bytes.buffer, spec, doc.group);
    const tk = tokenizer.model, special = new Set(tokenizer.added_tokens.map((t) => t.content));
    const esc = [...special].map((s) => s.replace(/[[\]]/g, "\\$&"));
    return { c: doc.config, w, max: doc.max_pieces, tokenizer: tk, vocab: new Map(Object.entries(tk.vocab)),
      special, specialSplit: new RegExp(`(${esc.join("|")})`) };
  }

  function load(onProgress) {
    if (model) return Promise.resolve(model);
    if (!loading) {
      if (!modelUrl) return Promise.reject(new Error("no model on this page"));
      loading = fetchAll(modelUrl, onProgress).then((m) => (model = m), (e) => { loading = null; throw e; });
    }
    return loading;
  }

  const tick = () => new Promise((r) => setTimeout(r, 0));

  // BertEncoder.forward (pretrained.py) on one sentence, then mean pooling and unit length
  async function run(text) {
    await load();
    const tokens = tokenize(text), m = model, c = m.c, d = c.d_model, T = tokens.length, eps = c.layer_norm_eps;
    const ids = tokens.map((t) => m.vocab.get(t));
    let x = new Float32Array(T * d);
    const W = m.w, we = W["word_embeddings.weight"], pe = W["position_embeddings.weight"], te = W["token_type_embeddings.weight"];
    for (let t = 0; t < T; t++)
      for (let i = 0; i < d; i++) x[t * d + i] = we[ids[t] * d + i] + pe[t * d + i] + te[i]; // sentence A: type 0
    x = nn.layerNorm(x, T, d, W["embedding_norm.weight"], W["embedding_norm.bias"], eps);
    const attentions = [];
    for (let l = 0; l < c.num_layers; l++) { // post-norm: LayerNorm(x + Sublayer(x)), section 3.1
      const p = (n) => W[`layers.${l}.${n}`];
      const a = nn.selfAttention(x, T, d, c.num_heads, {
        q_w: p("self_attn.q_proj.weight"), q_b: p("self_attn.q_proj.bias"), k_w: p("self_attn.k_proj.weight"),
        k_b: p("self_attn.k_proj.bias"), v_w: p("self_attn.v_proj.weight"), v_b: p("self_attn.v_proj.bias"),
        o_w: p("self_attn.out_proj.weight"), o_b: p("self_attn.out_proj.bias") }, null);
      x = nn.layerNorm(nn.add(a.out, x), T, d, p("norm1.weight"), p("norm1.bias"), eps);
      const h = nn.gelu(nn.linear(x, T, d, p("linear1.weight"), p("linear1.bias"), c.d_ff));
      x = nn.layerNorm(nn.add(nn.linear(h, T, c.d_ff, p("linear2.weight"), p("linear2.bias"), d), x), T, d,
        p("norm2.weight"), p("norm2.bias"), eps);
      attentions.push(a.weights.map((w) => [...Array(T).keys()].map((i) => Array.from(w.subarray(i * T, (i + 1) * T)))));
      await tick(); // one layer at a time: the page stays responsive
    }
    const e = new Float64Array(d);
    for (let t = 0; t < T; t++) for (let i = 0; i < d; i++) e[i] += x[t * d + i] / T;
    const norm = Math.sqrt(e.reduce((s, v) => s + v * v, 0));
    return { tokens, attentions, embedding: Array.from(e, (v) => v / norm) };
  }

  const api = (TL.minilm = { load: (onProgress) => load(onProgress).then(() => undefined), run, tokenize: (text) => tokenize(text), lastSeconds: null });

  // --- the widget ---
  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function init(box, n) {
    const id = (s) => `minilm${n}-${s}`, mb = (Number(box.dataset.bytes) / 1e6).toFixed(0);
    const a = el("textarea", { id: id("a"), rows: "2", spellcheck: "false" });
    a.value = box.dataset.sentence || "";
    const b = el("textarea", { id: id("b"), rows: "2", spellcheck: "false" });
    b.value = box.dataset.other || "";
    const go = el("button", { type: "button", class: "minilm-run" }, `Load the model (${mb} MB) and run`);
    const progress = el("progress", { max: "1", value: "0", hidden: "", "aria-label": "Loading the model" });
    const message = el("p", { class: "minilm-message", role: "status" });
    const sim = el("p", { class: "minilm-similarity", "aria-live": "polite" });
    const view = el("div", { class: "minilm-view" });
    const fa = el("div", { class: "minilm-field" }), fb = el("div", { class: "minilm-field" });
    fa.append(el("label", { for: id("a") }, "Your sentence"), a);
    fb.append(el("label", { for: id("b") }, "A second sentence, to compare (optional)"), b);
    const row = el("div", { class: "minilm-row" });
    row.append(go, progress);
    box.append(fa, fb, row, message, sim, view);
    box.hidden = false;
    let busy = false;

    async function click() {
      if (busy) return;
      busy = true;
      go.disabled = true;
      message.textContent = "";
      try {
        if (!model) {
          progress.hidden = false;
          message.textContent = `Loading the model (${mb} MB) from this site...`;
          await load((got, total) => { progress.value = got / total; });
          progress.hidden = true;
          go.textContent = "Run";
        }
        go.textContent = "Run"; // loaded (here or through the API)
        message.textContent = "Running the model...";
        const started = performance.now();
        const r = await run(a.value);
        const other = b.value.trim() ? await run(b.value) : null;
        api.lastSeconds = (performance.now() - started) / 1000;
        const T = r.tokens.length, L = r.attentions.length, H = r.attentions[0].length;
        const bytes = new Uint8Array(L * H * T * T);
        let k = 0;
        for (const layer of r.attentions) for (const head of layer) for (const q of head) for (const w of q)
          bytes[k++] = Math.min(255, Math.max(0, Math.round(w * 255)));
        let bin = "";
        for (let i = 0; i < bytes.length; i += 8192) bin += String.fromCharCode(...bytes.subarray(i, i + 8192));
        const data = { layers: L, heads: H, start: { sentence: 0, layer: 0, head: 0 },
          sentences: [{ text: a.value.trim(), tokens: r.tokens, weights: btoa(bin) }] };
        const fig = el("div", { class: "headview" });
        fig.append(el("script", { type: "application/json", class: "headview-data" }, JSON.stringify(data)));
        view.replaceChildren(fig);
        TL.headview.init(fig, 100 + n);
        if (other) {
          const cos = r.embedding.reduce((s, v, i) => s + v * other.embedding[i], 0);
          sim.textContent = `Cosine similarity of the two sentences' embeddings: ${cos.toFixed(3)} (1 = the same direction).`;
        } else sim.textContent = "";
        const unknown = r.tokens.filter((t) => t === "[UNK]").length;
        message.textContent = unknown === T - 2
          ? "Every word piece is [UNK], unknown to the model: its vocabulary (English words, pieces of words, letters of " +
            "many scripts) lacks these characters, emoji for instance, or a word is longer than 100 characters."
          : `${T - 2} word pieces${unknown ? `, ${unknown} of them [UNK] (characters the vocabulary lacks)` : ""}; ran in ${api.lastSeconds.toFixed(1)} s.`;
      } catch (e) {
        progress.hidden = true;
        message.textContent = e.message;
      } finally {
        busy = false;
        go.disabled = false;
      }
    }
    go.addEventListener("click", click);
  }

  nn.startBoxes("minilm", (box, n, url) => { modelUrl = url; init(box, n); });
})();
