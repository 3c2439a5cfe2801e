set -e
export LD_LIBRARY_PATH=$PWD/.devpack/lib EC_SHARED_DIR=$PWD/.devpack
for m in TinyLlama-1.1B Qwen2.5-3B; do
for v in "" "EXP_GROUPS=2" "EXP_MINRUN=6" "EXP_MINRUN=8" "EXP_GROUPS=2 EXP_MINRUN=6" "EXP_GROUPS=2 EXP_MINRUN=8" "EXP_MINRUN=2" "EXP_GROUPS=2 EXP_MINRUN=3"; do
  echo "== $m [$v]"
  env $v .devpack/bin/kernel_bench $m 640 nf4,fp8 2>&1 | grep -E "  64  " 
done; done
