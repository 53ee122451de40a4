#!/usr/bin/env bash
# Installs the build into a scratch prefix, then builds examples/minimal.c against it twice:
# with pkg-config and with find_package (shared and static), and runs each program.
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(ls -d "$tmp"/prefix/lib*/pkgconfig | head -n1)
export PKG_CONFIG_PATH="$libdir"
cc -std=c11 "$src/examples/minimal.c" $(pkg-config --cflags --libs lig) -Wl,-rpath,"$(dirname "$libdir")" -o "$tmp/pc"
"$tmp/pc"
cmake -S "$src/cmake/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DLIG_EXAMPLE="$src/examples/minimal.c" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
"$tmp/consumer/consumer_shared"
"$tmp/consumer/consumer_static"
echo "install check: pkg-config, find_package(lig) shared and static all built and ran"

# The CANN-compatible front end, when it was built: its headers stay out of include/acl (no clash
# with a real CANN), and a CANN-style program builds with pkg-config and with lig::aclnn, and runs.
if [ -f "$libdir/lig-aclnn.pc" ]; then
  test ! -e "$tmp/prefix/include/acl" && test -f "$tmp/prefix/include/lig-aclnn/acl/acl.h"
  cc -std=c11 "$src/aclnn/tests/install_consumer.c" $(pkg-config --cflags --libs lig-aclnn) \
     -Wl,-rpath,"$(dirname "$libdir")" -o "$tmp/aclnn_pc"
  "$tmp/aclnn_pc"
  cmake -S "$src/aclnn/tests/consumer" -B "$tmp/aclnn_consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
        -DLIG_ACLNN_EXAMPLE="$src/aclnn/tests/install_consumer.c" >/dev/null
  cmake --build "$tmp/aclnn_consumer" >/dev/null
  "$tmp/aclnn_consumer/consumer_aclnn"
  echo "install check: lig-aclnn with pkg-config and find_package(lig) (lig::aclnn) built and ran"
fi
