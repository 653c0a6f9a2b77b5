// The site's one stylesheet, built by code/build/book_build/speed/first_paint.py in two steps:
//
//   node first_paint_css.mjs bundle OUT.css IN1.css IN2.css ...
//     Lightning CSS (npm lightningcss, pinned in package.json) inlines the inputs in order
//     (an entry of @import rules: its documented bundler) and minifies them. Every url() is
//     rewritten to point from OUT's folder at the file it named in its own stylesheet: with
//     analyzeDependencies Lightning CSS replaces each url() by a placeholder and reports, for
//     each, the url and the file it was written in, so the rewrite is Lightning CSS's own
//     resolution, not a pattern over CSS text.
//   node first_paint_css.mjs purge SITE_DIR CSS...
//     PurgeCSS (npm purgecss, pinned) drops, in place, every rule whose selector names a
//     class, id or element that occurs in no page of the built site and in no script a page
//     loads (the theme's scripts add classes at run time: "show", "toggle-hidden", ...;
//     their names are in the scripts' text, which PurgeCSS reads too). The theme's
//     fontawesome.js, which no page loads (templates/layout.html), is not read: it
//     names every icon, and would keep the rules of 2,000 icons the site does not show.
//   node first_paint_css.mjs icons FONT_DIR CSS...
//     The icon fonts of FONT_DIR (the theme's Font Awesome: 300 kB a page, for some twenty
//     icons) cut, in place, by HarfBuzz's subsetter (npm subset-font, pinned) to the glyphs
//     the purged stylesheets can draw: every character of Unicode's Private Use Area in them
//     (Lightning CSS writes the icons' "\f09b"-style escapes as the characters themselves;
//     Font Awesome's icons all live in that area). A glyph the CSS does not name cannot be
//     shown by a page, so nothing a reader sees changes.
//   node first_paint_css.mjs katex FONT_DIR SITE_DIR
//     KaTeX's fonts (FONT_DIR, woff2) cut, in place, to the characters that occur in the
//     site's pages (their text, character references decoded, and printable ASCII): the
//     formulas are rendered at build time, so every character KaTeX draws is in a page.
//     A superset of what each font draws (a page's prose counts too), so nothing is lost.
// The bundle also gives KaTeX's @font-face rules font-display: optional (KaTeX sets none, so
// a formula's text was invisible until its font arrived). Not swap: a face that came after
// the first paint re-wrapped every paragraph of inline formulas (cheat_sheet moved by 0.196 on
// a slow CPU). The pages preload the faces they draw, and Chromium waits a short while for a
// preloaded optional font before the first paint; one that misses it is not drawn on that
// visit (the formula keeps its fallback, and the page never moves). Font Awesome keeps "block".
import fs from "node:fs";
import path from "node:path";

const [command, ...args] = process.argv.slice(2);

async function bundleCss(out, inputs) {
  const { bundle } = await import("lightningcss");
  const outDir = path.dirname(path.resolve(out));
  fs.mkdirSync(outDir, { recursive: true });
  const entry = path.join(outDir, `.entry-${process.pid}.css`);
  const rel = (file) => path.relative(outDir, path.resolve(file)).split(path.sep).join("/");
  fs.writeFileSync(entry, inputs.map((f) => `@import ${JSON.stringify(rel(f))};`).join("\n") + "\n");
  try {
    const { code, dependencies } = bundle({
      filename: entry,
      minify: true,
      analyzeDependencies: true,
      errorRecovery: true, // keep, as written, the few old vendor hacks it does not parse
      visitor: { Rule: { "font-face": katexFontDisplay } },
    });
    let css = code.toString();
    for (const dep of dependencies) {
      if (dep.type !== "url") continue;
      const [file] = dep.url.split(/[?#]/);
      const local = !/^([a-z][a-z0-9+.-]*:|\/\/|#|\/)/i.test(dep.url);
      const target = local ? rel(path.join(path.dirname(dep.loc.filePath), file)) + dep.url.slice(file.length) : dep.url;
      css = css.split(dep.placeholder).join(target);
    }
    fs.writeFileSync(out, css);
  } finally {
    fs.rmSync(entry, { force: true });
  }
}

function katexFontDisplay(rule) {
  const family = rule.value.properties.find((p) => p.type === "font-family");
  if (!/^KaTeX_/.test(family?.value ?? "")) return undefined;
  const properties = rule.value.properties.filter((p) => p.value?.name !== "font-display");
  const optional = [{ type: "token", value: { type: "ident", value: "optional" } }];
  properties.push({ type: "custom", value: { name: "font-display", value: optional } });
  return { ...rule, value: { ...rule.value, properties } };
}

async function subsetKatex(fontDir, site) {
  const subsetFont = (await import("subset-font")).default;
  const chars = new Set(Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)));
  const ref = /&#(x[0-9a-f]+|[0-9]+);/gi;
  for (const page of files(site, (n) => n.endsWith(".html"))) {
    const html = fs.readFileSync(page, "utf8").replace(ref, (_, n) => String.fromCodePoint(Number("0" + n)));
    for (const ch of html) chars.add(ch);
  }
  const text = [...chars].join("");
  let before = 0, after = 0;
  for (const name of fs.readdirSync(fontDir).filter((n) => n.endsWith(".woff2"))) {
    const file = path.join(fontDir, name), font = fs.readFileSync(file);
    const cut = await subsetFont(font, text, { targetFormat: "woff2" });
    before += font.length; after += cut.length;
    fs.writeFileSync(file, cut);
  }
  console.log(`${chars.size} characters: ${before} -> ${after}`);
}

function files(dir, test) {
  return fs.readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile() && test(d.name))
    .map((d) => path.join(d.parentPath ?? d.path, d.name));
}

async function purgeCss(site, sheets) {
  const { PurgeCSS } = await import("purgecss");
  const content = [
    ...files(site, (n) => n.endsWith(".html")),
    ...files(site, (n) => n.endsWith(".js") && !n.startsWith("fontawesome")),
  ];
  const results = await new PurgeCSS().purge({ content, css: sheets });
  for (const r of results) fs.writeFileSync(r.file, r.css);
}

async function subsetIcons(fontDir, sheets) {
  const subsetFont = (await import("subset-font")).default;
  const icons = new Set();
  for (const sheet of sheets) {
    for (const ch of fs.readFileSync(sheet, "utf8")) {
      const cp = ch.codePointAt(0);
      if (cp >= 0xe000 && cp <= 0xf8ff) icons.add(ch);
    }
  }
  if (icons.size === 0) throw new Error(`no icon character in ${sheets.join(", ")}`);
  const text = [...icons].join("");
  for (const name of fs.readdirSync(fontDir)) {
    const format = { ".woff2": "woff2", ".woff": "woff", ".ttf": "sfnt" }[path.extname(name)];
    if (!format) continue;
    const file = path.join(fontDir, name);
    fs.writeFileSync(file, await subsetFont(fs.readFileSync(file), text, { targetFormat: format }));
  }
  console.log(icons.size);
}

if (command === "bundle" && args.length >= 2) {
  await bundleCss(args[0], args.slice(1));
} else if (command === "purge" && args.length >= 2) {
  await purgeCss(args[0], args.slice(1));
} else if (command === "icons" && args.length >= 2) {
  await subsetIcons(args[0], args.slice(1));
} else if (command === "katex" && args.length === 2) {
  await subsetKatex(args[0], args[1]);
} else {
  console.error("usage: node first_paint_css.mjs bundle OUT.css IN.css... | purge SITE_DIR CSS... | icons FONT_DIR CSS... | katex FONT_DIR SITE_DIR");
  process.exit(2);
}
