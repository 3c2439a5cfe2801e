#!/usr/bin/env bash
# check-layers.sh — fails when a file under src/LAYER includes a header of a layer above LAYER.
#
# The order (lowest first) is docs/architecture.md's stack: common < meter < quant < model <
# engine < calib < store < bench < analysis < advise = report = exporter < cli. A header is
# placed by its path: include/ecocompute/NAME.h is layer NAME (results.h is the store's record),
# "LAYER/..." is that layer's internal header, a bare "file.h" is the including file's own folder.
# A layer reaches another only through what it exports (include/ecocompute/): another layer's
# internal header is a violation too, except src/common's (the library's shared toolbox: CSV, CUDA
# error checks), which every layer may use.
# Usage: scripts/check-layers.sh [repository root]   (prints each violation; exit 1 if any)
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"

rank() {
  case "$1" in
    common) echo 0 ;; meter) echo 1 ;; quant) echo 2 ;; model) echo 3 ;; engine) echo 4 ;;
    calib) echo 5 ;; store | results) echo 6 ;; bench) echo 7 ;; analysis) echo 8 ;;
    advise | report | exporter) echo 9 ;; cli) echo 10 ;;
    *) echo "" ;;
  esac
}

bad=0
while IFS= read -r -d '' file; do
  layer=${file#src/}
  layer=${layer%%/*}
  own=$(rank "$layer")
  [[ -n $own ]] || continue
  while IFS= read -r line; do
    header=${line#*\"}
    header=${header%%\"*}
    case "$header" in
      ecocompute/*.h) target=${header#ecocompute/}; target=${target%.h} ;;
      */*)
        target=${header%%/*}
        if [[ $target != "$layer" && $target != common && -n $(rank "$target") ]]; then
          echo "$file: includes \"$header\" (an internal header of $target; use what $target exports)"
          bad=1
          continue
        fi
        ;;
      *) continue ;;
    esac
    theirs=$(rank "$target")
    [[ -n $theirs ]] || continue
    if ((theirs > own)); then
      echo "$file: includes \"$header\" (layer $target sits above $layer)"
      bad=1
    fi
  done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" || true)
done < <(find src -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print0)
exit "$bad"
