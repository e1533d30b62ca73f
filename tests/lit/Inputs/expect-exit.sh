#!/bin/sh
# expect-exit N CMD ARGS...: runs CMD and succeeds only if it exits with status N (lit's `not`
# accepts any nonzero status; the CLI's documented exit codes need the exact one).
want=$1; shift
"$@"
got=$?
if [ "$got" -ne "$want" ]; then
  echo "expect-exit: '$*' exited with $got, expected $want" >&2
  exit 1
fi
exit 0
