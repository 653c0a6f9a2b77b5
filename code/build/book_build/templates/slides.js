const tlPrint = /print-pdf/.test(window.location.search);
const tlLaidOut = tlPrint ? new Promise(done => document.addEventListener("pdf-ready", done, {once: true})) : null;
Reveal.initialize({hash: !tlPrint, slideNumber: "c/t", width: $width, height: $height, margin: 0.04, center: false,
  showNotes: false, pdfMaxPagesPerSlide: 1, pdfSeparateFragments: false, plugins: [RevealNotes]})
  .then(() => tlWhenReady(tlLaidOut));
