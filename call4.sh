set -e
export LD_LIBRARY_PATH=$PWD/.devpack/lib EC_SHARED_DIR=$PWD/.devpack
for m in Llama-2-7B Qwen2.5-0.5B Phi-3-mini Qwen2.5-14B Qwen2-1.5B; do
for v in "" "EXP_GROUPS=2" "EXP_GROUPS=1"; do
  echo "== $m [$v]"
  env $v .devpack/bin/kernel_bench $m 640 nf4,fp8 2>&1 | grep -E "  64  " 
done; done
