#!/bin/sh
# Rebuilds test/golden/kquants/*.json from the ggml that node-llama-cpp ships (run from the repo root).
set -e
LIB=node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
gcc -O1 -std=c11 -o /tmp/kquants_golden tools/golden/kquants_golden.c -L"$LIB" -l:libggml-base.so -Wl,-rpath,"$PWD/$LIB" -lm
mkdir -p test/golden/kquants
/tmp/kquants_golden test/golden/kquants
