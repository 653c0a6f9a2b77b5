/* The illustrated walk of "The Transformer" book (transformer_lessons.walk, book_build.site.WalkHtml):
   a <div class="tl-walk"> holds one <figure data-step="k"> per frame and the controls. Without
   JavaScript every frame shows, numbered; with it walk.css shows one frame (the first, from the
   first paint) and this script moves between them: the Previous and Next buttons, and the left
   and right arrow keys while the focus is inside the walk. Plain JavaScript, no network. */
(function () {
  "use strict";
  function setUp(root) {
    var frames = Array.prototype.slice.call(root.querySelectorAll("figure[data-step]"));
    var prev = root.querySelector(".tl-walk-prev"), next = root.querySelector(".tl-walk-next");
    var status = root.querySelector(".tl-walk-status");
    var n = frames.length, current = 0;
    if (!n || !prev || !next || !status) return;
    root.tabIndex = -1; /* a click on a frame puts the focus in the walk, for the arrow keys */
    function show(i) {
      current = Math.max(0, Math.min(n - 1, i));
      frames.forEach(function (f, j) { f.classList.toggle("tl-walk-on", j === current); });
      root.setAttribute("data-current", String(current + 1));
      status.textContent = "Step " + (current + 1) + " of " + n;
      prev.disabled = current === 0;
      next.disabled = current === n - 1;
    }
    prev.addEventListener("click", function () { show(current - 1); if (prev.disabled) next.focus(); });
    next.addEventListener("click", function () { show(current + 1); if (next.disabled) prev.focus(); });
    root.addEventListener("keydown", function (e) {
      if (e.altKey || e.ctrlKey || e.metaKey) return;
      if (e.key === "ArrowRight") show(current + 1);
      else if (e.key === "ArrowLeft") show(current - 1);
      else if (e.key === "Home") show(0);
      else if (e.key === "End") show(n - 1);
      else return;
      e.preventDefault();
    });
    root.addEventListener("click", function (e) { if (!e.target.closest("button")) root.focus({ preventScroll: true }); });
    show(0);
  }
  function init() { Array.prototype.forEach.call(document.querySelectorAll(".tl-walk"), setUp); }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
