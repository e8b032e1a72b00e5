#!/bin/sh
# Interleaved rounds of the core bench: the tree before queues (643508e; plain case only),
# main as merged (8f51b4a's core; without and with 20 queues) and this branch's core patch.
cd /work/wt-benchq
for r in 1 2 3 4 5; do
  echo "== round $r before-queues (643508e)"
  PYTHONPATH=/tmp/benchq-base .venv/bin/python /tmp/benchq-core_bench.py --repeat 1
  echo "== round $r main (8f51b4a)"
  PYTHONPATH=/tmp/benchq-main .venv/bin/python /tmp/benchq-core_bench.py --repeat 1 --queues 20
  echo "== round $r patched (this branch)"
  .venv/bin/python /tmp/benchq-core_bench.py --repeat 1 --queues 20
done
