#!/usr/bin/env bash
# Regenerates ../*.ser with the JDK (any version 8+): ./run.sh
set -euo pipefail
cd "$(dirname "$0")"
tmp=$(mktemp -d)
javac -d "$tmp" Samples.java
java -cp "$tmp" Samples ..
rm -rf "$tmp"
