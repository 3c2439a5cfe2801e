#!/usr/bin/env bash
# on-device.sh SCRIPT [ARGS...] — run on the GPU machine from the repository root: recreates the
# development machine's paths (the CTest files in build/ hold absolute paths), puts the carried
# libraries on the loader path, and runs SCRIPT. See bench/device-prep.sh.
set -euo pipefail
root=$(pwd)
dev_root=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/CMakeCache.txt)
mkdir -p "$(dirname "$dev_root")"
[ "$dev_root" = "$root" ] || ln -sfn "$root" "$dev_root"
export LD_LIBRARY_PATH="$root/.devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cd "$dev_root"
exec bash "$@"
