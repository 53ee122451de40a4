#!/usr/bin/env bash
# Installs the build into a scratch prefix and checks the CANN-compatible front end there: its
# headers stay out of include/acl (no clash with a real CANN in a shared prefix), and a CANN-style
# C program builds with pkg-config lig-aclnn and with find_package(lig) + lig::aclnn, and runs.
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
pcdir=$(ls -d "$tmp"/prefix/lib*/pkgconfig | head -n1)
export PKG_CONFIG_PATH="$pcdir"
test ! -e "$tmp/prefix/include/acl"
test -f "$tmp/prefix/include/lig-aclnn/acl/acl.h"
test -f "$tmp/prefix/include/lig-aclnn/aclnnop/aclnn_lightning_indexer_grad.h"
test -f "$tmp/prefix/include/lig-aclnn/aclnnop/aclnn_lightning_indexer.h"
test -f "$tmp/prefix/include/lig-aclnn/aclnnop/aclnn_sparse_lightning_indexer_grad_kl_loss.h"
test -f "$tmp/prefix/include/lig-aclnn/aclnnop/aclnn_quant_lightning_indexer.h"
cc -std=c11 "$src/aclnn/tests/install_consumer.c" $(pkg-config --cflags --libs lig-aclnn) \
   -Wl,-rpath,"$(dirname "$pcdir")" -o "$tmp/aclnn_pc"
"$tmp/aclnn_pc"
cmake -S "$src/aclnn/tests/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DLIG_ACLNN_EXAMPLE="$src/aclnn/tests/install_consumer.c" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
"$tmp/consumer/consumer_aclnn"
echo "aclnn install check: headers under include/lig-aclnn; pkg-config lig-aclnn and lig::aclnn built and ran"
