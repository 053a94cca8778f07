#!/bin/bash
# Builds FlashMLA's SM90 dense decode — only what flash_mla_with_kvcache needs: the dense
# decode kernel (bf16), the scheduler-metadata kernel and the combine kernel — for sm_90a,
# from a FlashMLA checkout the user names, into a git-ignored folder (default peer/flashmla)
# that adapters/flashmla.py imports. Nothing is downloaded; nothing is committed.
#
#   bash scripts/build_flashmla.sh FLASHMLA_DIR [--cutlass DIR] [--out DIR] [--jobs N]
#
# FLASHMLA_DIR: a checkout of deepseek-ai/FlashMLA (tested at 9241ae3); its csrc/cutlass
# submodule must hold CUTLASS's headers, or pass --cutlass with a CUTLASS tree (include/ and
# tools/util/include/). FlashMLA's own setup.py also builds the SM100 and sparse kernels
# and runs git; this script compiles four translation units with FlashMLA's own nvcc flags
# and a two-line pybind11 module of its own (mlactl_dense_api.cpp) that binds
# dense_attn_decode_interface (csrc/api/dense_decode.h) as upstream's api.cpp does.
#
# Toolkits: CUDA 13 keeps libcu++ in $CUDA_HOME/include/cccl, which nvcc finds and torch's
# cpp_extension does not give g++: it is added. A toolkit from pip wheels may lack an
# unversioned libcudart.so: a symlink to libcudart.so.<major> is made in OUT/lib.
# Where it has been run: docs/executor-protocol.md (Adapters).
set -euo pipefail

die() { echo "build_flashmla.sh: $*" >&2; exit 2; }
usage() { sed -n '7,8p' "$0" | sed 's/^# *//' >&2; exit 2; }

[ $# -ge 1 ] || usage
SRC=$1; shift
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$ROOT/peer/flashmla
CUTLASS=""
JOBS=$(nproc 2>/dev/null || echo 4)
while [ $# -gt 0 ]; do
  case $1 in
    --cutlass) [ $# -ge 2 ] || usage; CUTLASS=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || usage; OUT=$2; shift 2 ;;
    --jobs) [ $# -ge 2 ] || usage; JOBS=$2; shift 2 ;;
    *) usage ;;
  esac
done
[ -d "$SRC" ] || die "FLASHMLA_DIR '$SRC' is not a directory (a checkout of deepseek-ai/FlashMLA)"
SRC=$(cd "$SRC" && pwd)
PY=${PYTHON:-python3}

# ---- 1. the sources this build needs, each named when missing
NEEDED="csrc/api/dense_decode.h csrc/api/common.h csrc/params.h
csrc/sm90/decode/dense/instantiations/bf16.cu
csrc/smxx/decode/get_decoding_sched_meta/get_decoding_sched_meta.cu
csrc/smxx/decode/combine/combine.cu
csrc/kerutils/include
flash_mla/__init__.py flash_mla/flash_mla_interface.py"
for f in $NEEDED; do
  [ -e "$SRC/$f" ] || die "$SRC/$f is missing: FLASHMLA_DIR must be a FlashMLA checkout with the SM90 dense decode (tested at 9241ae3)"
done
if [ -z "$CUTLASS" ]; then
  CUTLASS=$SRC/csrc/cutlass
  [ -f "$CUTLASS/include/cute/tensor.hpp" ] ||
    die "$CUTLASS/include/cute/tensor.hpp is missing: FlashMLA's CUTLASS submodule is empty (git submodule update --init csrc/cutlass in the checkout, or --cutlass DIR)"
else
  [ -f "$CUTLASS/include/cute/tensor.hpp" ] || die "--cutlass $CUTLASS: include/cute/tensor.hpp is missing (a CUTLASS tree with include/)"
fi
CUTLASS=$(cd "$CUTLASS" && pwd)
[ -d "$CUTLASS/tools/util/include" ] || die "$CUTLASS/tools/util/include is missing (FlashMLA includes CUTLASS's util headers)"

# ---- 2. the toolchain: torch with its cpp_extension, a CUDA toolkit with nvcc
"$PY" -c "import torch" 2>/dev/null || die "$PY cannot import torch (PYTHON=... names another interpreter)"
CUDA_HOME=$("$PY" -c "from torch.utils.cpp_extension import CUDA_HOME; print(CUDA_HOME or '')")
[ -n "$CUDA_HOME" ] || die "torch finds no CUDA toolkit (set CUDA_HOME to the toolkit root, the folder with bin/nvcc)"
[ -x "$CUDA_HOME/bin/nvcc" ] || die "$CUDA_HOME/bin/nvcc is missing (CUDA_HOME must be a toolkit with nvcc)"
"$PY" -c "import ninja" 2>/dev/null || command -v ninja >/dev/null || echo "build_flashmla.sh: no ninja: torch compiles the four files one after another" >&2
export CUDA_HOME

mkdir -p "$OUT/lib"
OUT=$(cd "$OUT" && pwd)
EXTRA_INC=""
[ -d "$CUDA_HOME/include/cccl" ] && EXTRA_INC=$CUDA_HOME/include/cccl
LIB_DIRS=""
if ! ls "$CUDA_HOME"/lib64/libcudart.so "$CUDA_HOME"/lib/libcudart.so >/dev/null 2>&1; then
  versioned=$(ls "$CUDA_HOME"/lib*/libcudart.so.[0-9]* 2>/dev/null | head -1 || true)
  [ -n "$versioned" ] || die "no libcudart.so under $CUDA_HOME/lib64 or lib (a runtime library is needed to link)"
  ln -sf "$versioned" "$OUT/lib/libcudart.so"
  LIB_DIRS=$OUT/lib
  echo "build_flashmla.sh: linking through $OUT/lib/libcudart.so -> $versioned (a pip-wheel toolkit)" >&2
fi

# ---- 3. the build tree: the Python package and the sources, our module file and setup
rm -rf "$OUT/src"
mkdir -p "$OUT/src"
tar -C "$SRC" --exclude=csrc/cutlass --exclude='*.so' --exclude=__pycache__ -cf - flash_mla csrc | tar -C "$OUT/src" -xf -
ln -s "$CUTLASS" "$OUT/src/csrc/cutlass"
cat > "$OUT/src/mlactl_dense_api.cpp" <<'EOF'
// Written by scripts/build_flashmla.sh (mlactl): the dense decode binding of FlashMLA's
// csrc/api/api.cpp alone, so the sparse, prefill and SM100 sources need not build.
#include <pybind11/pybind11.h>

#include "dense_decode.h"

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("dense_decode_fwd", &dense_attn_decode_interface); }
EOF
cat > "$OUT/src/mlactl_setup.py" <<'EOF'
# Written by scripts/build_flashmla.sh (mlactl): FlashMLA's SM90 dense decode only, sm_90a,
# with the nvcc flags of FlashMLA's setup.py (the fp16 instantiation disabled).
import os
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

here = os.path.dirname(os.path.abspath(__file__))
dirs = lambda v: [d for d in os.environ.get(v, "").split(os.pathsep) if d]
features = ["-DFLASH_MLA_DISABLE_FP16"]
cxx = ["-O3", "-std=c++20", "-DNDEBUG", "-Wno-deprecated-declarations"] + features + ["-I" + d for d in dirs("MLACTL_EXTRA_INC")]
nvcc = ["-O3", "-std=c++20", "-DNDEBUG", "-D_USE_MATH_DEFINES", "-Wno-deprecated-declarations",
        "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__", "-U__CUDA_NO_HALF2_OPERATORS__",
        "-U__CUDA_NO_BFLOAT16_CONVERSIONS__", "--expt-relaxed-constexpr", "--expt-extended-lambda",
        "--use_fast_math", "--ptxas-options=--register-usage-level=10", "-lineinfo"] + features + ["-gencode", "arch=compute_90a,code=sm_90a"]
src = lambda p: os.path.join("csrc", p)
ext = CUDAExtension(
    name="flash_mla.cuda",
    sources=["mlactl_dense_api.cpp", src("smxx/decode/get_decoding_sched_meta/get_decoding_sched_meta.cu"),
             src("smxx/decode/combine/combine.cu"), src("sm90/decode/dense/instantiations/bf16.cu")],
    extra_compile_args={"cxx": cxx, "nvcc": nvcc},
    include_dirs=[os.path.join(here, d) for d in ("csrc/api", "csrc", "csrc/kerutils/include", "csrc/sm90",
                                                   "csrc/cutlass/include", "csrc/cutlass/tools/util/include")],
    library_dirs=dirs("MLACTL_LIB_DIRS"),
)
setup(name="flash_mla", version="0+mlactl.dense_sm90", packages=["flash_mla"], ext_modules=[ext],
      cmdclass={"build_ext": BuildExtension})
EOF

# ---- 4. build and check the import
t0=$(date +%s)
echo "build_flashmla.sh: building $SRC ($(cd "$SRC" && git rev-parse --short HEAD 2>/dev/null || echo 'no git')) into $OUT/src with $JOBS jobs" >&2
(cd "$OUT/src" && MAX_JOBS=$JOBS MLACTL_EXTRA_INC=$EXTRA_INC MLACTL_LIB_DIRS=$LIB_DIRS \
  "$PY" mlactl_setup.py build_ext --inplace > "$OUT/build.log" 2>&1) ||
  { tail -30 "$OUT/build.log" >&2; die "the build failed; the whole log is $OUT/build.log"; }
(cd / && PYTHONPATH=$OUT/src "$PY" -c "from flash_mla import flash_mla_with_kvcache, get_mla_metadata") ||
  die "built, but 'from flash_mla import flash_mla_with_kvcache' fails with PYTHONPATH=$OUT/src"
echo "build_flashmla.sh: built in $(( $(date +%s) - t0 )) s; adapters/flashmla.py finds it in $OUT/src (or PYTHONPATH=$OUT/src)"
