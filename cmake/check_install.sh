#!/usr/bin/env bash
# Installs the build into a scratch prefix, then builds examples/minimal.c against it: with the
# README's pkg-config lines, run as written (rpath, then LD_LIBRARY_PATH), and with find_package
# (shared and static), and runs each program.
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
export PKG_CONFIG_PATH=$(ls -d "$tmp"/prefix/lib*/pkgconfig | head -n1)
# The README's sh blocks that use pkg-config, in the order they appear; app.c is the minimal
# example. No LD_LIBRARY_PATH from outside: the lines themselves must make liblig.so found.
awk '/^```sh[ \t]*$/ { inside = 1; block = ""; next }
     /^```/ { if (inside && block ~ /pkg-config/) printf "%s", block; inside = 0; next }
     inside { block = block $0 "\n" }' "$src/README.md" > "$tmp/readme_pkg_config.sh"
if ! grep -q pkg-config "$tmp/readme_pkg_config.sh"; then
  echo "install check: README.md has no sh block with pkg-config lines" >&2
  exit 1
fi
mkdir "$tmp/app"
cp "$src/examples/minimal.c" "$tmp/app/app.c"
(cd "$tmp/app" && env -u LD_LIBRARY_PATH bash -euo pipefail "$tmp/readme_pkg_config.sh" >/dev/null)
cmake -S "$src/cmake/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DLIG_EXAMPLE="$src/examples/minimal.c" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
"$tmp/consumer/consumer_shared"
"$tmp/consumer/consumer_static"
echo "install check: the README's pkg-config lines, find_package(lig) shared and static all built and ran"
