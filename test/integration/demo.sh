#!/usr/bin/env bash
# The README's first command, contrib/m2g-demo, end to end on its own
# testbed: it must build (already built here), start the cluster, run the
# sample workload and say where every job went.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

SRC=${M2G_SRCDIR:?}
OUT=$TB_TMP/demo.out
# Its own base, outside lib.sh's testbed slots, and stopped at the end.
rc=0
# The EXIT trap stops it if the demo left it running, and removes its
# directory when every test passed (kept for a look when one failed), so
# the next run finds no leftovers.
TB_DIR=/tmp/m2g-testbed-32000 _TB_RUNNING=1
M2G_TESTBED_BASE=32000 "$SRC/contrib/m2g-demo" --down >"$OUT" 2>&1 || rc=$?
is "$rc" 0 "contrib/m2g-demo --down exits 0"
[[ $rc == 0 ]] || sed 's/^/#   /' "$OUT" | tail -40

ok "grep -q '^cluster m2gtb: 144 nodes, 576 GPUs, 8 NVLink domains, 3 switches' '$OUT'" \
	"it shows the topology m2g sees"
ok "grep -q '^SwitchName=nvl01 Level=0' '$OUT'" "it shows Slurm's switch records"
is "$(grep -c '^       where: ' "$OUT")" 8 "it says where each of the 8 jobs went"
ok "! grep -q '       state: ' '$OUT'" "every job COMPLETED"
ok "grep -A1 -E '^[0-9]+ +pretrain-2racks ' '$OUT' | grep -q 'in 2 NVLink domains (.*all whole)'" \
	"the two-rack job took two whole NVLink domains"
ok "grep -A1 -E '^[0-9]+ +pretrain-4racks ' '$OUT' | grep -q 'in 4 NVLink domains (.*all whole) under 1 leaf switch'" \
	"the four-rack job took four whole NVLink domains under one leaf"
ok "grep -Eq '^ *[0-9]+ +train-deferrable +PENDING +BeginTime' '$OUT'" "the DR scene: the training job waits for the event's end"
ok "grep -Eq '^ *[0-9]+ +inference-svc +(RUNNING|COMPLETED)' '$OUT'" "the DR scene: the inference service runs"
ok "grep -Eq 'left PENDING [0-9]+ s after the event ended: (RUNNING|COMPLETED|COMPLETING)' '$OUT'" \
	"the DR scene: the training job starts once the event ends"
ok "! ls /tmp/m2g-testbed-32000/pids/*.pid >/dev/null 2>&1 || ! $SRC/contrib/m2g-testbed status --base 32000 >/dev/null 2>&1" \
	"--down leaves no testbed running"
done_testing
