#!/usr/bin/env bash
# Builds and runs loom's single-GPU overlap experiments (issue 7, spec §10;
# src/loom/overlap/cuda/): the overlap tax of loom's tile GEMM vs cuBLAS, AG+GEMM with pinned
# host memory as the remote ranks (copy engine + stream-written flags), GEMM+RS with an epilogue
# storing to mapped host memory, Comet's communication/compute block split, and host<->GPU
# signal latencies. Writes OUTDIR/overlap_cuda.json, OUTDIR/overlap_cuda.log and
# OUTDIR/nvidia_smi.txt.
#
#   scripts/device/overlap_cuda.sh [OUTDIR] [--quick]   # OUTDIR defaults to $OUT
#   scripts/device/overlap_cuda.sh --compile-only       # nvcc compile + link check, no GPU needed
#
# Needs only the CUDA toolkit (nvcc, cuBLAS; CUDA 13 tested for compilation) and, to run, an
# sm_90 GPU (H100/H200) with its driver; no CMake. The run is capped at 280 s (the full run is
# sized to take well under a minute on one H200). NVCC picks the compiler (default: nvcc on PATH,
# then $CUDA_HOME/bin, then /usr/local/cuda/bin).
#
# Exit status: 0 ok; 1 no GPU, or a check/wait failed in the benchmark (see the log and the
# JSON's "failures"); 2 usage; 3 CUDA error; 124 timed out; other: build failure.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
src_dir="$root/src/loom/overlap/cuda"

out="" quick=() compile_only=0
usage() {
  sed -n '9,10p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=(--quick); shift ;;
    --compile-only) compile_only=1; shift ;;
    -h|--help) usage ;;
    -*) echo "overlap_cuda.sh: unknown flag $1" >&2; usage ;;
    *) out=$1; shift ;;
  esac
done
if [ "$compile_only" = 0 ]; then
  out=${out:-${OUT:-}}
  if [ -z "$out" ]; then
    echo "overlap_cuda.sh: no output directory (pass OUTDIR or set \$OUT)" >&2
    usage
  fi
  if ! command -v nvidia-smi > /dev/null 2>&1; then
    echo "overlap_cuda.sh: nvidia-smi not found: no NVIDIA GPU/driver on this machine" >&2
    exit 1
  fi
  if ! nvidia-smi -L > /dev/null 2>&1; then
    echo "overlap_cuda.sh: nvidia-smi fails: no usable NVIDIA GPU on this machine" >&2
    exit 1
  fi
fi

nvcc=${NVCC:-}
if [ -z "$nvcc" ]; then
  for candidate in "$(command -v nvcc || true)" "${CUDA_HOME:-/nonexistent}/bin/nvcc" \
                   /usr/local/cuda/bin/nvcc; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then nvcc=$candidate; break; fi
  done
fi
if [ -z "$nvcc" ]; then
  echo "overlap_cuda.sh: nvcc not found (set NVCC or CUDA_HOME)" >&2
  exit 4
fi
cuda_home=$(cd "$(dirname "$nvcc")/.." && pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/loom_overlap_cuda.XXXXXX")
trap 'rm -rf "$work"' EXIT

flags=(-arch=sm_90a -std=c++17 -O3 -I"$root/src" -Xcompiler -Wall -Xcompiler -Wextra
       -Xcompiler -Werror -Werror all-warnings)
objs=()
for src in "$src_dir"/*.cu; do
  obj="$work/$(basename "$src" .cu).o"
  "$nvcc" "${flags[@]}" -c "$src" -o "$obj"
  objs+=("$obj")
done

libs=(-L"$cuda_home/lib64" -Xlinker -rpath="$cuda_home/lib64" -lcublas -lcuda)
if [ -e "$cuda_home/lib64/stubs/libcuda.so" ]; then
  # Link against the toolkit's driver stub (soname libcuda.so.1): it works on a machine without a
  # driver and on one whose driver ships no unversioned libcuda.so; the real driver library is
  # what loads at run time (the stubs directory is not on the rpath).
  libs=(-L"$cuda_home/lib64" -L"$cuda_home/lib64/stubs" "${libs[@]:1}")
elif [ "$compile_only" = 1 ] && ! ldconfig -p 2> /dev/null | grep -q 'libcuda\.so'; then
  echo "overlap_cuda.sh: compiled ${#objs[@]} files; link not checked (no libcuda, no stub)"
  exit 0
fi
bin="$work/loom_overlap_cuda_bench"
"$nvcc" -arch=sm_90a "${objs[@]}" -o "$bin" "${libs[@]}"
if [ "$compile_only" = 1 ]; then
  echo "overlap_cuda.sh: compile and link check passed (${#objs[@]} files, sm_90a)"
  exit 0
fi

mkdir -p "$out"
nvidia-smi -q > "$out/nvidia_smi.txt" 2>&1 || true
# Eager module loading: a kernel loaded lazily while another one spins could stall behind it.
export CUDA_MODULE_LOADING=EAGER
set +e
timeout --kill-after=10 280 "$bin" --out "$out" ${quick[@]+"${quick[@]}"} 2>&1 |
  tee "$out/overlap_cuda.log"
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
  echo "overlap_cuda.sh: loom_overlap_cuda_bench timed out after 280 s" >&2
elif [ "$rc" != 0 ]; then
  echo "overlap_cuda.sh: loom_overlap_cuda_bench exited with $rc (see $out/overlap_cuda.log)" >&2
else
  echo "overlap_cuda.sh: results in $out/overlap_cuda.json"
fi
exit "$rc"
