#!/usr/bin/env bash
# Turn an exported SVG or HTML into a PNG with headless Chromium (Debian: apt-get install chromium).
#   scripts/export-png.sh data.svg            # writes data.png
#   scripts/export-png.sh data.html out.png 1200x900
set -euo pipefail
src=${1:?usage: export-png.sh FILE.svg|FILE.html [OUT.png] [WIDTHxHEIGHT]}
out=${2:-${src%.*}.png}
size=${3:-}
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [[ -z $browser ]]; then
  echo "export-png.sh: needs chromium (apt-get install chromium)" >&2
  exit 2
fi
if [[ -z $size && $src == *.svg ]]; then  # the SVG's own size, from its viewBox
  read -r w h < <(sed -n 's/.*viewBox="[0-9.]* [0-9.]* \([0-9.]*\) \([0-9.]*\)".*/\1 \2/p' "$src" | head -1)
  size="$(printf '%.0f' "$w")x$(printf '%.0f' "$h")"
fi
size=${size:-1400x1000}
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --force-device-scale-factor=1 \
  --window-size="${size/x/,}" --screenshot="$(realpath -m "$out")" "file://$(realpath "$src")" >/dev/null 2>&1
echo "wrote $out ($size)"
