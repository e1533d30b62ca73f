#!/usr/bin/env bash
# The static yardstick (bench/README.md): tilec vs Triton on the kernel set, from ptxas -v and the
# SASS; modelled cycles from support/targets.def. Options: bench/static.sh --help.
exec python3 "$(dirname "$0")/static.py" "$@"
