#!/usr/bin/env bash
# Regenerate docs/demo.svg (shown in the README) from a real run of a shipped example.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m tcopy_cli run --example data --width 100 --export docs/demo.svg \
  --title "tcopy run --example data" >/dev/null
echo "wrote docs/demo.svg"
