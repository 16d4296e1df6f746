#!/bin/sh
# Rebuilds ggml_golden against node-llama-cpp's prebuilt libggml-base.so and rewrites test/golden/ggml/*.json.
set -eu
cd "$(dirname "$0")/../.."
LIB="$PWD/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
OUT="${TMPDIR:-/tmp}/kvpack-ggml-golden"
gcc -std=c11 -O1 -Wall -Wextra -o "$OUT" tools/golden/ggml_golden.c -L"$LIB" -l:libggml-base.so -Wl,-rpath,"$LIB" -lm
"$OUT" test/golden/ggml
echo "wrote test/golden/ggml/*.json"
