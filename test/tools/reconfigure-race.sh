#!/usr/bin/env bash
# reconfigure-race.sh — how often a Slurm reconfigure loses messages to the
# wrong munge socket on a testbed.
#
# Slurm 22.05 decodes every message with auth_g_verify(cred,
# slurm_conf.authinfo) and reads slurm_conf.authinfo without a lock, while
# `scontrol reconfigure` frees and rereads slurm_conf in place
# (slurm_conf_reinit in read_config.c): a message decoded in that window
# goes to munge's default socket, /run/munge/munge.socket.2, instead of
# AuthInfo=socket=... A testbed on a private socket then loses it
# (doc/testbed.md, "Reconfigure and the munge socket").
#
# This script brings up a testbed, and for each of N rounds submits a burst
# of short jobs (so epilog-complete and step messages flow while slurmctld
# reconfigures), runs `scontrol reconfigure`, and waits for the burst to
# end. It counts, per round, slurmctld and slurmd log lines that decoded a
# credential through the default socket, and jobs that did not finish.
#
#   test/tools/reconfigure-race.sh [--slurm 22.05|26.05] [--rounds N] [--jobs N]
#                                  [--racks N] [--stock] [--no-mount-ns]
#
# --no-mount-ns starts the daemons as the testbed did before it gave them a
# private mount namespace (m2g-testbed --no-mount-ns), to see the race.
# Prints one line per round and a summary:
#   rounds R, rounds with default-socket decodes D, lines L, jobs not finished J
# Exit status 0 when no round lost anything, 1 otherwise, 2 on bad usage.
set -euo pipefail

REL=22.05 ROUNDS=20 JOBS=24 RACKS=1 STOCK=() NS=()
while (($#)); do
	case $1 in
		--slurm) REL=${2:?--slurm needs 22.05 or 26.05}; shift ;;
		--rounds) ROUNDS=${2:?}; shift ;;
		--jobs) JOBS=${2:?}; shift ;;
		--racks) RACKS=${2:?}; shift ;;
		--stock) STOCK=(--stock) ;;
		--no-mount-ns) NS=(--no-mount-ns) ;;
		-h | --help) sed -n '2,27p' "$0"; exit 0 ;;
		*) echo "reconfigure-race.sh: unknown option '$1'; see --help" >&2; exit 2 ;;
	esac
	shift
done
[[ $ROUNDS =~ ^[1-9][0-9]*$ && $JOBS =~ ^[1-9][0-9]*$ && $RACKS =~ ^[1-9][0-9]?$ ]] ||
	{ echo "reconfigure-race.sh: --rounds, --jobs and --racks take positive numbers" >&2; exit 2; }

TOP=$(cd "$(dirname "$0")/../.." && pwd)
TESTBED=$TOP/contrib/m2g-testbed
BASE=${M2G_RACE_BASE:-31000}
DIR=/tmp/m2g-testbed-$BASE
trap '"$TESTBED" down --dir "$DIR" >/dev/null 2>&1 || true' EXIT
"$TESTBED" up --base "$BASE" --racks "$RACKS" --slurm "$REL" --no-dbd "${STOCK[@]}" "${NS[@]}" >&2
eval "$("$TESTBED" env --dir "$DIR")"

# Lines that decoded a credential through munge's default socket.
PATTERN='munge.socket.2'
count() { cat "$DIR"/log/slurmctld.log "$DIR"/log/slurmd-*.log 2>/dev/null | grep -c "$PATTERN" || true; }

bad_rounds=0 lines=0 lost=0
for ((r = 1; r <= ROUNDS; r++)); do
	before=$(count)
	ids=()
	for ((j = 0; j < JOBS; j++)); do
		ids+=("$(sbatch --parsable -N1 -t 2 -o /dev/null --wrap 'srun true; sleep 0.$((RANDOM % 9))')")
	done
	sleep 1
	scontrol reconfigure
	# Every job of the burst ends within 60 s unless a message was lost.
	left=$JOBS
	for ((k = 0; k < 120 && left > 0; k++)); do
		sleep 0.5
		left=$(squeue -h -j "$(IFS=,; echo "${ids[*]}")" 2>/dev/null | wc -l)
	done
	after=$(count)
	n=$((after - before))
	((n == 0)) || bad_rounds=$((bad_rounds + 1))
	lines=$((lines + n))
	lost=$((lost + left))
	echo "round $r: $n default-socket line(s), $left of $JOBS jobs not finished after 60 s"
	((left == 0)) || scancel "${ids[@]}" 2>/dev/null || true
done
echo "rounds $ROUNDS, rounds with default-socket decodes $bad_rounds, lines $lines, jobs not finished $lost"
((bad_rounds == 0 && lost == 0))
