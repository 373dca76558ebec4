#!/usr/bin/env bash
# (A copy of the project's shared device script, kept here so the repo is self-contained.)
# Pack programs built here for the GPU machine: the programs plus the shared
# libraries they need that the GPU machine lacks (Z3, TBB, ONNX, ...).  The GPU
# machine has its own CUDA, cuBLAS, cuDNN, glibc, libstdc++, SQLite and protobuf.
#
# usage: bundle.sh DEST PROGRAM...     then carry DEST and, there, run
#        LD_LIBRARY_PATH=DEST/lib:$LD_LIBRARY_PATH DEST/bin/PROGRAM ...
# Put DEST in a folder that .git/info/exclude ignores and name it in `carry`.
set -euo pipefail
dest=$1; shift
mkdir -p "$dest/bin" "$dest/lib"
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|librt\.so|libpthread\.so|libgcc_s|libstdc\+\+|libcuda\.so|libcudart|libcublas|libcublasLt|libcudnn|libnvrtc|libnvJitLink|libcurand|libcufft|libcusparse|libcusolver|libnccl)'
for prog in "$@"; do
  cp "$prog" "$dest/bin/"
  ldd "$prog" | awk '/=> \// {print $1, $3}' | while read -r name path; do
    [[ $name =~ $skip ]] && continue
    cp -L "$path" "$dest/lib/$name"
  done
done
du -sh "$dest"
