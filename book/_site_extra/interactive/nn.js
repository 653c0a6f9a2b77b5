/* The forward pass of the book's Transformer layers, in plain JavaScript.
 *
 * One small module shared by the language-model page (charlm.js) and the real-model page
 * (minilm.js), with their boxes' start-up (startBoxes):
 * matrix products, layer normalisation, softmax, GELU and multi-head attention, on
 * Float32Array matrices stored row by row (a (T, d) matrix is T rows of d values), the
 * weights in PyTorch's layout (nn.Linear: weight (out, in)). Sums are taken in double
 * precision (JavaScript numbers) and stored as float32, so the results equal PyTorch's
 * float32 ones to about 1e-6. No library, no network, no worker, no WebAssembly: it runs
 * from any static host and from `python3 -m http.server`.
 *
 * Published as window.transformerLessons.nn.
 */
(function () {
  "use strict";
  if (window.transformerLessons && window.transformerLessons.nn) return; // included twice: run once

  // y (T, out) = x (T, in) W^T + b, with W (out, in) as nn.Linear stores it
  function linear(x, T, nIn, W, b, nOut) {
    const y = new Float32Array(T * nOut);
    for (let t = 0; t < T; t++) {
      const xo = t * nIn;
      for (let o = 0; o < nOut; o++) {
        const wo = o * nIn;
        // four partial sums: independent additions the engine can overlap (about 2x faster)
        let s0 = 0, s1 = 0, s2 = 0, s3 = 0, i = 0;
        for (; i + 3 < nIn; i += 4) {
          s0 += x[xo + i] * W[wo + i];
          s1 += x[xo + i + 1] * W[wo + i + 1];
          s2 += x[xo + i + 2] * W[wo + i + 2];
          s3 += x[xo + i + 3] * W[wo + i + 3];
        }
        for (; i < nIn; i++) s0 += x[xo + i] * W[wo + i];
        y[t * nOut + o] = (b ? b[o] : 0) + (s0 + s1 + s2 + s3);
      }
    }
    return y;
  }

  // LayerNorm over the last axis: (x - mean) / sqrt(var + eps) * gamma + beta (biased variance, as PyTorch)
  function layerNorm(x, T, d, gamma, beta, eps) {
    const y = new Float32Array(T * d);
    for (let t = 0; t < T; t++) {
      const o = t * d;
      let mean = 0;
      for (let i = 0; i < d; i++) mean += x[o + i];
      mean /= d;
      let v = 0;
      for (let i = 0; i < d; i++) v += (x[o + i] - mean) ** 2;
      const inv = 1 / Math.sqrt(v / d + eps);
      for (let i = 0; i < d; i++) y[o + i] = (x[o + i] - mean) * inv * gamma[i] + beta[i];
    }
    return y;
  }

  // softmax of a row, in place, max subtracted first (no overflow); entries with keep[j] false get 0
  function softmaxRow(row, n, keep) {
    let m = -Infinity;
    for (let j = 0; j < n; j++) if (!keep || keep(j)) m = Math.max(m, row[j]);
    let s = 0;
    for (let j = 0; j < n; j++) {
      const e = !keep || keep(j) ? Math.exp(row[j] - m) : 0;
      row[j] = e;
      s += e;
    }
    for (let j = 0; j < n; j++) row[j] /= s;
    return row;
  }

  // erf (JavaScript has none): Abramowitz and Stegun 7.1.26, |error| < 1.5e-7, so GELU is
  // off by under 1e-6 for |x| < 10, far inside the float32 tolerance the tests use
  function erf(x) {
    const s = x < 0 ? -1 : 1, a = Math.abs(x);
    const t = 1 / (1 + 0.3275911 * a);
    let y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-a * a);
    return s * y;
  }

  // exact GELU, x * Phi(x) (BERT's "gelu"), in place
  function gelu(x) {
    for (let i = 0; i < x.length; i++) x[i] = 0.5 * x[i] * (1 + erf(x[i] / Math.SQRT2));
    return x;
  }

  function relu(x) {
    for (let i = 0; i < x.length; i++) if (x[i] < 0) x[i] = 0;
    return x;
  }

  // Multi-head attention (Vaswani et al., 2017, section 3.2.2), self-attention of h (T, E):
  // p = {q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b}, H heads of d_k = E / H;
  // canAttend(i, j) true = query i may see key j (the book's mask convention), or null.
  // Returns {out (T, E), weights: H arrays of (T, T)}.
  function selfAttention(h, T, E, H, p, canAttend) {
    const dk = E / H, scale = 1 / Math.sqrt(dk);
    const q = linear(h, T, E, p.q_w, p.q_b, E), k = linear(h, T, E, p.k_w, p.k_b, E), v = linear(h, T, E, p.v_w, p.v_b, E);
    const heads = new Float32Array(T * E); // the heads' outputs side by side, (T, H * d_k)
    const weights = [];
    const row = new Float64Array(T);
    for (let hd = 0; hd < H; hd++) {
      const off = hd * dk, w = new Float32Array(T * T);
      for (let i = 0; i < T; i++) {
        for (let j = 0; j < T; j++) {
          let s = 0;
          for (let c = 0; c < dk; c++) s += q[i * E + off + c] * k[j * E + off + c];
          row[j] = s * scale; // q . k / sqrt(d_k), equation 1
        }
        softmaxRow(row, T, canAttend ? (j) => canAttend(i, j) : null);
        for (let j = 0; j < T; j++) w[i * T + j] = row[j];
        for (let c = 0; c < dk; c++) {
          let s = 0;
          for (let j = 0; j < T; j++) s += row[j] * v[j * E + off + c];
          heads[i * E + off + c] = s;
        }
      }
      weights.push(w);
    }
    return { out: linear(heads, T, E, p.o_w, p.o_b, E), weights };
  }

  // One new query q (E) against n cached keys and values K, V (rows of E, n <= their rows),
  // H heads: the attention of a key-value cache (the decoder page's cached_self_attention).
  // No mask is needed: the cache holds only the past. Returns {out (E), weights: H arrays (n)}.
  function attendOne(q, K, V, n, E, H) {
    const dk = E / H, scale = 1 / Math.sqrt(dk), out = new Float32Array(E), weights = [];
    const row = new Float64Array(n);
    for (let hd = 0; hd < H; hd++) {
      const off = hd * dk;
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let c = 0; c < dk; c++) s += q[off + c] * K[j * E + off + c];
        row[j] = s * scale;
      }
      softmaxRow(row, n, null);
      for (let c = 0; c < dk; c++) {
        let s = 0;
        for (let j = 0; j < n; j++) s += row[j] * V[j * E + off + c];
        out[off + c] = s;
      }
      weights.push(Float32Array.from(row));
    }
    return { out, weights };
  }

  function add(a, b) {
    for (let i = 0; i < a.length; i++) a[i] += b[i];
    return a;
  }

  // the tensors of a {tensors: {name: {offset, shape}}} index over one Float32Array
  function views(index, flat) {
    const out = {};
    for (const [name, spec] of Object.entries(index)) {
      const n = spec.shape.reduce((a, b) => a * b, 1);
      out[name] = flat.subarray(spec.offset, spec.offset + n);
    }
    return out;
  }

  // The boxes' start-up (charlm.js, minilm.js): init(box, n, modelUrl) for every <div class="name">
  // of the page, once it is parsed; modelUrl is the box's data-model, resolved against the page.
  function startBoxes(name, init) {
    const start = () => document.querySelectorAll(`div.${name}`).forEach((box, n) =>
      init(box, n, new URL(box.dataset.model, document.baseURI).href));
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
    else start();
  }

  window.transformerLessons = window.transformerLessons || {};
  window.transformerLessons.nn = { linear, layerNorm, softmaxRow, erf, gelu, relu, selfAttention, attendOne, add, views,
    startBoxes };
})();
