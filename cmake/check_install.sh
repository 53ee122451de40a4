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
