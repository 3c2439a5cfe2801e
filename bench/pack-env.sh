# pack-env.sh — sourced by the GPU scripts (gpu.sh, *-check.sh) after they cd to the repository
# root: sets `pack` (the carried .devpack of bench/device-pack.sh) and, when the call carried
# one, puts its libraries and the Debian ones it packs (unpacked once per machine) on
# LD_LIBRARY_PATH; exports ECOCOMPUTE_NCCL_LIBRARY when the loader has no NCCL but PyTorch's
# wheel does (bench/find-nccl.sh), for tensor-parallel runs and test_cuda_tp.
pack=$(pwd)/.devpack
if [ -d "$pack" ]; then
    if [ -f "$pack/syslibs.tar.xz" ] && [ ! -d /tmp/ec-syslibs ]; then
        mkdir -p /tmp/ec-syslibs && tar -xJf "$pack/syslibs.tar.xz" -C /tmp/ec-syslibs
    fi
    export LD_LIBRARY_PATH="$pack/lib:/tmp/ec-syslibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
ec_nccl=$(bash bench/find-nccl.sh) && [ -z "$ec_nccl" ] || export ECOCOMPUTE_NCCL_LIBRARY=$ec_nccl
