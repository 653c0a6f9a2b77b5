// Long pages, laid out as they are read (custom.css: each section of a chapter has
// content-visibility: auto, so the browser lays out and paints a section only when it comes
// near the screen; on a phone the first paint of a long chapter waits for one section, not
// all of them). Two things the skipping would otherwise break, put right here:
//
// 1. Where a reload brings the reader back. The browser restores the old scroll offset, but
//    sections not laid out since the page was opened count as custom.css's estimate, so after
//    a reload (or a phone restoring a tab it had discarded) the same offset showed another
//    paragraph. A page opened again from the history or reloaded is therefore laid out whole
//    (class long-pages-whole on <html>, which custom.css's rule excludes) before the browser
//    restores the offset: the old place, at the cost of the full layout the skipping saves on
//    a first visit. (Putting the reader back in a script instead, at the block that was at the
//    top of the window, still missed in 3 of 9 reloads in Chromium: the heights of the
//    sections the browser had laid out once and skipped again were not those of the page.)
// 2. Keyboard access to boxes that scroll sideways (code, cell outputs, tables): such a box
//    takes the focus (tabindex 0) so that the arrow keys scroll it; a box that fits does not
//    (-1). pydata-sphinx-theme measured every box of the page at load, on each resize and on
//    each change of the page; measuring a box in a skipped section makes the browser lay that
//    section out, which undid the skipping (Chromium: 110 ms at load on the foundations page).
//    Its routine is switched off at build time (book/_ext/performance.py); here every box
//    starts focusable and is measured when the browser lays it out (a ResizeObserver reports
//    it then, and whenever its size changes), when it comes into view, when its content
//    changes and when the window changes width.
(() => {
  "use strict";

  const [nav] = performance.getEntriesByType("navigation");
  if (nav && nav.type !== "navigate") document.documentElement.classList.add("long-pages-whole");

  // pydata-sphinx-theme 0.17's list of boxes that may scroll
  const BOXES = ["pre", ".nboutput > .output_area", ".cell_output > .output", ".jp-RenderedHTMLCommon",
    ".pst-scrollable-table-container"].join(", ");
  const main = document.getElementById("main-content");
  if (!main) return;
  const measure = (boxes) => {
    const scrolls = boxes.map((b) => b.scrollWidth > b.clientWidth || b.scrollHeight > b.clientHeight);
    boxes.forEach((b, i) => { b.tabIndex = scrolls[i] ? 0 : -1; });
  };
  const sizes = new ResizeObserver((entries) => measure(entries.map((e) => e.target)));
  // and each time it comes into view: what it holds may have changed width without the box
  // changing size (the web fonts arriving after it was first measured)
  const views = new IntersectionObserver((entries) => measure(entries.filter((e) => e.isIntersecting).map((e) => e.target)));
  const watch = (box) => { box.tabIndex = 0; sizes.observe(box); views.observe(box); };
  main.querySelectorAll(BOXES).forEach(watch);
  // When the window changes width, a box in a skipped section is not laid out again and so not
  // reported: it goes back to focusable (never out of the keyboard's reach) until it is; the
  // boxes of the sections on screen are measured.
  const SECTIONS = ".bd-article > section > section"; // custom.css's rule
  const whole = document.documentElement.classList.contains("long-pages-whole");
  const skipped = new Set(whole ? [] : document.querySelectorAll(SECTIONS));
  skipped.forEach((s) => s.addEventListener("contentvisibilityautostatechange", (e) => {
    if (e.skipped) skipped.add(s); else skipped.delete(s);
  }));
  let width = window.innerWidth;
  let timer = null;
  window.addEventListener("resize", () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (window.innerWidth === width) return; // a phone's address bar showing or hiding
      width = window.innerWidth;
      const shown = [];
      main.querySelectorAll(BOXES).forEach((box) => {
        if (skipped.has(box.closest(SECTIONS))) box.tabIndex = 0; else shown.push(box);
      });
      measure(shown);
    }, 100);
  });
  new MutationObserver((records) => {
    const changed = new Set();
    for (const r of records) {
      const at = r.target.nodeType === Node.ELEMENT_NODE ? r.target : r.target.parentElement;
      const box = at && at.closest(BOXES);
      if (box) changed.add(box);
      for (const n of r.addedNodes) {
        if (n.nodeType !== Node.ELEMENT_NODE) continue;
        if (n.matches(BOXES)) watch(n);
        n.querySelectorAll(BOXES).forEach(watch);
      }
    }
    if (changed.size) measure([...changed].filter((b) => b.isConnected));
  }).observe(main, { subtree: true, childList: true, characterData: true });
})();
