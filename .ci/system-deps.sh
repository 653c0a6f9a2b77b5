#!/usr/bin/env bash
# Debian packages the build and the tests need; installs only what is missing.
#   TeX Live (xelatex via sphinx-jupyterbook-latex) + latexmk + FreeFont: the PDFs
#   poppler-utils: pdfinfo/pdftotext/pdfimages in the PDF tests
#   chromium: the real-browser tests (offline site, hidden answers)
#   nodejs + npm: MathJax comes from the npm registry (served offline by the site)
set -euo pipefail
packages=(texlive-xetex texlive-fonts-recommended fonts-freefont-otf latexmk poppler-utils chromium nodejs npm)
missing=()
for p in "${packages[@]}"; do
  if [ "$p" = npm ] || [ "$p" = nodejs ]; then
    command -v "$p" >/dev/null 2>&1 && continue   # the machine's own Node.js is fine
  fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "system-deps: all present"
  exit 0
fi
echo "system-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
