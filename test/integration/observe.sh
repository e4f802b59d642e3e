#!/usr/bin/env bash
# m2g explain, m2g status and m2g job on the real testbed (4 NVL72 racks,
# every m2g plugin, a signals feed, accounting): the CLI reads slurmctld and
# slurmdbd through libslurm and says why jobs wait, were deferred or went
# where they went; status numbers are checked against scontrol/squeue, job
# GPU-hours against sacct; `m2g status --plot` draws a real PNG.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

M2G=${M2G_BUILDDIR:?}/src/cli/m2g
T=$TB_TMP

cat >"$T/observe.conf" <<'EOF'
SignalsFile=@DIR@/run/signals.json
SignalsStatusFile=@DIR@/run/signals-status.json
SignalsPollSec=1
SignalsTTLSec=600
ReleaseCheckSec=2
EnergyPricePerKWh=0.25
EnergyCurrency=EUR
DefaultPricePerGpuHour=2
EOF
tb_up --racks 4 --conf-extra "$T/observe.conf"
FEED=$TB_DIR/run/signals.json
STATUS=$TB_DIR/run/signals-status.json

# write_feed: the feed from $EVENTS (JSON), replaced atomically as an agent would.
write_feed() {
	cat >"$FEED.tmp" <<-EOF
		{"schema": "m2g.signals/v1", "generated_at": $(date +%s), "source": "observe.sh",
		 "power": {"site": {"budget_kw": 2000, "draw_kw": 100}},
		 "events": ${EVENTS:-[]}${ADR_EVENTS:+, \"openadr_events\": $ADR_EVENTS}}
	EOF
	mv -f "$FEED.tmp" "$FEED"
}
# jq-less JSON checks: py 'EXPR' FILE evaluates EXPR with d = the parsed file.
# show FILE...: the files as "# " lines.
show() { sed 's/^/#   /' "$@"; }
py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($1) else 1)" "$2"; }
rack_of() { job_nodelist "$1" | sed -E 's/^r([0-9]+).*/nvl\1/'; }
# used_per_rack: "nvl01 8" lines, GPUs in use per rack from scontrol's GresUsed.
used_per_rack() {
	scontrol -d -o show node | sed -nE 's/^NodeName=r([0-9]+)n[0-9]+ .*GresUsed=gpu:([0-9]+).*/\1 \2/p' |
		awk '{u[$1] += $2} END {for (r in u) printf "nvl%s %d\n", r, u[r]}' | sort
}
admin_comment() { squeue -h -t all -j "$1" -O admin_comment:600 | sed 's/ *$//'; }

write_feed
tb_await_feed "$FEED" "$STATUS"
ok "grep -q '\"state\": *\"fresh\"' '$STATUS'" "job_submit/m2g has read the feed (status file: fresh)"

# --- usage and errors ----------------------------------------------------------------
rc=0; "$M2G" explain >/dev/null 2>&1 || rc=$?
is "$rc" 2 "m2g explain without a job id is a usage error (2)"
rc=0; "$M2G" explain 4000000000 >"$T/out" 2>"$T/err" || rc=$?
ok "[[ $rc == 4 ]] && grep -q '4000000000' '$T/err'" "an unknown job: not found (exit 4), and the message names it"
show "$T/err"
rc=0; SLURM_CONF=$T/nonexistent.conf "$M2G" status >"$T/out" 2>"$T/err" || rc=$?
ok "[[ $rc == 5 ]] && grep -q 'SLURM_CONF' '$T/err'" "no slurm.conf: Slurm unreachable (exit 5), naming SLURM_CONF"
show "$T/err"
# A copy of the configuration pointing at a port where no slurmctld listens.
cp -r "$TB_DIR/etc" "$T/etc-dead"
sed -i -E 's/^SlurmctldPort=.*/SlurmctldPort=9/; s/^MessageTimeout=.*//' "$T/etc-dead/slurm.conf"
grep -q '^SlurmctldPort=' "$T/etc-dead/slurm.conf" || echo 'SlurmctldPort=9' >>"$T/etc-dead/slurm.conf"
echo 'MessageTimeout=2' >>"$T/etc-dead/slurm.conf"
rc=0; SLURM_CONF=$T/etc-dead/slurm.conf timeout 120 "$M2G" status >"$T/out" 2>"$T/err" || rc=$?
ok "[[ $rc == 5 ]] && grep -q 'cannot reach slurmctld' '$T/err'" "slurmctld down: exit 5, 'cannot reach slurmctld' and Slurm's reason"
show "$T/err"

# --- every rack partly used; an 18-node strict:nvlink job must wait -----------------------
f1=$(sbatch --parsable -N2 -w 'r01n[01-02]' --gres=gpu:4 --m2g-class=inference --wrap 'sleep 900')
f2=$(sbatch --parsable -N1 -w r02n01 --gres=gpu:4 --m2g-class=inference --wrap 'sleep 900')
f3=$(sbatch --parsable -N1 -w r03n01 --gres=gpu:2 --m2g-class=inference --wrap 'sleep 900')
f4=$(sbatch --parsable -N3 -w 'r04n[01-03]' --gres=gpu:4 --m2g-class=inference --wrap 'sleep 900')
started=0
for j in $f1 $f2 $f3 $f4; do wait_job_state "$j" RUNNING 60 && started=$((started + 1)); done
is "$started" 4 "4 inference jobs run, one in every rack"
pl=$(sbatch --parsable -N2 --gres=gpu:4 --m2g-topology=strict:nvlink --m2g-class=finetune --wrap 'sleep 900')
check "a 2-node strict:nvlink job runs" wait_job_state "$pl" RUNNING 60
sw=$(sbatch --parsable -N18 --exclusive --gres=gpu:4 --m2g-topology=strict:nvlink --m2g-class=training \
	--wrap 'sleep 5')
# m2g explain reads select/m2g's verdict in the AdminComment: wait for it
# (Slurm's own reason, Resources, comes earlier).
tb_wait_for "select/m2g's verdict on job $sw" 30 tb_comment_has "$sw" 'waiting policy=strict:nvlink' || true
is "$(job_state "$sw")" PENDING "an 18-node strict:nvlink job waits while every rack has a busy node ($(squeue -h -j "$sw" -o %r))"

# explain: strict-waiting
used_per_rack >"$T/used.before"
rc=0; "$M2G" explain "$sw" >"$T/x-wait" 2>"$T/x-wait.err" || rc=$?
ok "[[ $rc == 0 ]] && grep -qi 'wait' '$T/x-wait'" "explain (strict waiting): says the job waits"
ok "grep -qi 'strict' '$T/x-wait' && grep -qi 'nvlink' '$T/x-wait'" "explain (strict waiting): names the strict:nvlink request as the reason"
ev=$(grep -i 'free' "$T/x-wait" | tr '\n' ' ')
miss=""
while read -r r u; do [[ $ev =~ $r[^0-9]+$((72 - u))([^0-9]|$) ]] || miss+=" $r:$((72 - u))"; done <"$T/used.before"
ok "[[ -z '$miss' ]]" "explain (strict waiting): evidence of free GPUs per domain, as scontrol counts them${miss:+ (missing$miss)}"
ok "grep -qi 'prefer' '$T/x-wait'" "explain (strict waiting): suggests --m2g-topology=prefer"
ok "grep -q 'frees first: 18 of its nodes are free by ' '$T/x-wait'" \
	"explain (strict waiting): names the domain that frees first and when, by the running jobs' limits"
diag "m2g explain $sw (strict waiting):"; show "$T/x-wait"
if [[ -s $T/x-wait.err ]]; then diag "its standard error:"; show "$T/x-wait.err"; fi
"$M2G" explain "$sw" --json >"$T/x-wait.json" || true
ok "py '\"verdict\" in d and \"summary\" in d and \"evidence\" in d and \"suggestions\" in d and d[\"job\"] == $sw' '$T/x-wait.json'" \
	"explain --json parses and has job, verdict, summary, evidence, suggestions"
ok "py 'd[\"verdict\"] == \"waiting\"' '$T/x-wait.json'" "explain --json: verdict waiting"

# --- m2g forecast: the same cluster run forward through m2g's own sessions ---------------
ok "grep -q 'm2g forecast: with strict:nvlink it should start ' '$T/x-wait'" \
	"explain (strict waiting): quotes the forecast, when the job should start and where"
ok "grep -q \"with --m2g-topology=any it would start at Slurm's next scheduling pass instead of \" '$T/x-wait'" \
	"explain (strict waiting): the forecast's alternative, any would start it at once"
rc=0; "$M2G" forecast --json --job "$sw" >"$T/fc.json" 2>"$T/fc.err" || rc=$?
ok "[[ $rc == 0 ]] && py 'd[\"made_at_epoch\"] > 0' '$T/fc.json'" "m2g forecast --json --job runs and parses"
if [[ $rc != 0 ]]; then show "$T/fc.err"; fi
# Both read the running jobs' end times: the strict job starts when the
# domain explain names frees.
free_by=$(sed -nE 's/.*frees first: 18 of its nodes are free by ([0-9TZ:-]+) .*/\1/p' "$T/x-wait" | head -1)
free_epoch=$(date -d "${free_by:-1970-01-01T00:00:00Z}" +%s)
fjob="[j for j in d['jobs'] if j['job'] == $sw][0]"
ok "py \"$fjob['start'] == $free_epoch and $fjob['nodes'] == 18\" '$T/fc.json'" \
	"forecast: the strict job starts when its domain frees (${free_by:-no time in explain}), as explain says"
ok "py \"any(a['topology'] == 'any' and a['start'] is not None for a in $fjob['alternatives'])\" '$T/fc.json'" \
	"forecast --job: the job's start under the other intents"
ok "py \"d['running'] >= 5 and d['power'][0]['scope'] == 'site' and d['power'][0]['p50_kw'][0] > 0\" '$T/fc.json'" \
	"forecast: the running jobs are in it and the site draws power now"
SRC=${M2G_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
DATA=${M2G_DATA:-$(cd "$SRC/.." && pwd)/shared/data}
if [[ -r $DATA/acme2023_power_thermal_cdf.csv ]]; then
	rc=0; "$M2G" forecast --json --power-cdf "$DATA/acme2023_power_thermal_cdf.csv" --samples 8 >"$T/fc-cdf.json" 2>"$T/fc-cdf.err" || rc=$?
	ok "[[ $rc == 0 ]] && py \"d['samples'] == 8 and all(b['p10_kw'][k] <= b['p50_kw'][k] <= b['p90_kw'][k] for b in d['power'] for k in range(len(b['p50_kw']))) and d['power'][0]['p10_kw'][0] < d['power'][0]['p90_kw'][0]\" '$T/fc-cdf.json'" \
		"forecast --power-cdf (Acme's per-GPU power): P10 <= P50 <= P90 everywhere, a band with width now"
else
	skip "forecast --power-cdf" "no ../shared/data (M2G_DATA) here"
fi
rc=0; "$M2G" forecast --json --flex 25%:1h --flex-start now+10m >"$T/fc-flex.json" 2>"$T/fc-flex.err" || rc=$?
ok "[[ $rc == 0 ]] && py \"len(d['flexibility']) == 1 and abs(d['flexibility'][0]['target_kw'] - 0.75 * d['flexibility'][0]['draw_at_start_kw']) < 0.02 and d['flexibility'][0]['duration_s'] == 3600 and d['flexibility'][0]['start'] - d['made_at_epoch'] in range(599, 602)\" '$T/fc-flex.json'" \
	"forecast --flex 25%:1h from now+10m: the offer's target is 75% of the forecast draw then"
ok "py \"(lambda x: x['money'] is not None and x['money']['currency'] == 'EUR' and abs(x['money']['delay_cost'] - 2 * (x['deferrable_delay_gpu_h'] + x['nondeferrable_delay_gpu_h'])) <= 0.05 and abs(x['money']['energy_shifted_value'] - 0.25 * x['energy_shifted_kwh']) <= 0.01)(d['flexibility'][0])\" '$T/fc-flex.json'" \
	"forecast --flex in money: delay at DefaultPricePerGpuHour=2, energy shifted at EnergyPricePerKWh=0.25 EUR"
ADR=${M2G_OPENADR_DIR:-$(cd "$SRC/.." && pwd)/shared/deps/openadr3-3.1.0}
rc=0; "$M2G" forecast --openadr --openadr-event dr-test-1 --flex 25%:1h --flex-start now+10m >"$T/fc-adr.json" 2>"$T/fc-adr.err" || rc=$?
if [[ -r $ADR/openadr3.yaml ]]; then
	why=$(python3 "$SRC/test/tools/validate-openadr.py" "$ADR" reports "$T/fc-adr.json" 2>&1) || rc=$?
	ok "$rc" "forecast --openadr: reportRequest objects valid against OpenADR 3.1.0 (openadr3.yaml and its enumerations, in place)"
	if [[ $rc != 0 ]]; then diag "$why"; show "$T/fc-adr.err"; fi
else
	skip "forecast --openadr against OpenADR 3.1.0" "no OpenADR definition at $ADR (../shared/deps; M2G_OPENADR_DIR)"
fi
ok "py \"len(d) == 2 and d[0]['eventID'] == 'dr-test-1' and d[0]['payloadDescriptors'][0]['payloadType'] == 'USAGE_FORECAST' and len(d[0]['resources']) == len(json.load(open('$T/fc-flex.json'))['power']) and len(d[0]['resources'][0]['intervals']) == 97 and len(d[1]['resources'][0]['intervals']) == 4 and [p['type'] for p in d[1]['resources'][0]['intervals'][0]['payloads']] == ['BASELINE', 'LOAD_SHED_DELTA_AVAILABLE']\" '$T/fc-adr.json'" \
	"forecast --openadr: USAGE_FORECAST for the site, rows and racks (97 steps of 15 min), the offer's BASELINE and LOAD_SHED_DELTA_AVAILABLE in 4 steps"
rc=0; "$M2G" forecast --openadr --openadr-event 'not an id' >/dev/null 2>"$T/fc-adr.err" || rc=$?
ok "[[ $rc == 1 ]] && grep -q 'is not an OpenADR object ID; accepted: 1 to 128 letters' '$T/fc-adr.err'" \
	"forecast --openadr-event with spaces: exit 1, saying what an OpenADR object ID is"
rc=0; "$M2G" forecast --flex 25%:1y >/dev/null 2>"$T/fc-flex.err" || rc=$?
ok "[[ $rc == 1 ]] && grep -q 'accepted: DEPTH%:DURATION' '$T/fc-flex.err'" "forecast --flex with a bad duration: exit 1, saying what is accepted"
"$M2G" forecast >"$T/fc.txt" 2>&1 || true
ok "grep -q 'site GPU power, kW (P10 / P50 / P90), hourly:' '$T/fc.txt' && grep -q '^$sw ' '$T/fc.txt'" \
	"m2g forecast (text): the pending jobs' table and the site's power"
diag "m2g forecast:"; show "$T/fc.txt"

# explain: placed
rack=$(rack_of "$pl")
rc=0; "$M2G" explain "$pl" >"$T/x-placed" 2>"$T/x-placed.err" || rc=$?
ok "[[ $rc == 0 ]] && grep -q '$rack' '$T/x-placed'" "explain (placed): names the job's domain ($rack)"
diag "m2g explain $pl (placed):"; show "$T/x-placed"
"$M2G" explain "$pl" --json >"$T/x-placed.json" || true
ok "py 'd[\"verdict\"] in (\"placed\", \"running\")' '$T/x-placed.json'" "explain --json (placed): verdict placed/running"

rc=0; "$M2G" job "$pl" --json >"$T/job-run.json" 2>/dev/null || rc=$?
ok "[[ $rc == 0 ]] && py 'd[\"gpus\"] == 8 and d[\"runtime_s\"] > 0 and d[\"from\"] == \"slurmctld\"' '$T/job-run.json'" \
	"m2g job (running): 8 GPUs, runtime so far"

# --- a job that ends: GPU-hours and cost, from slurmctld and then from accounting ---------
fin=$(sbatch --parsable -N4 --gres=gpu:4 --m2g-class=training --wrap 'sleep 30')
wait_job_state "$fin" COMPLETED 90
rc=0; "$M2G" job "$fin" --json >"$T/job1.json" 2>"$T/job1.err" || rc=$?
ok "[[ $rc == 0 ]] && py 'd[\"gpu_hours\"] > 0 and d[\"from\"] == \"slurmctld\"' '$T/job1.json'" "m2g job (finished, still in slurmctld): GPU-hours, read from slurmctld"
show "$T/job1.json"

# --- a demand-response event defers a batch job -------------------------------------------
now=$(date +%s)
ev_end=$((now + 3600))
EVENTS="[{\"id\": \"dr-obs\", \"start\": $((now - 60)), \"end\": $ev_end, \"curtail_pct\": 50, \"scope\": \"site\"}]"
write_feed
tb_await_feed "$FEED" "$STATUS"
df=$(sbatch --parsable -N1 --gres=gpu:4 --m2g-class=batch --wrap 'sleep 5')
check "during the event a batch job is deferred" tb_wait_for "job $df PENDING/BeginTime" 10 job_is "$df" PENDING/BeginTime
rc=0; "$M2G" explain "$df" >"$T/x-defer" 2>"$T/x-defer.err" || rc=$?
ev_end_utc=$(date -u -d "@$ev_end" +%Y-%m-%dT%H:%M:%SZ)
ok "[[ $rc == 0 ]] && grep -q 'dr-obs' '$T/x-defer'" "explain (deferred): names the event"
ok "grep -q '$ev_end_utc' '$T/x-defer'" "explain (deferred): gives the event's end time ($ev_end_utc)"
ok "grep -qi 'automatic' '$T/x-defer'" "explain (deferred): says the job starts automatically"
diag "m2g explain $df (deferred):"; show "$T/x-defer"
"$M2G" explain "$df" --json >"$T/x-defer.json" || true
ok "py 'd[\"verdict\"] == \"deferred\"' '$T/x-defer.json'" "explain --json (deferred): verdict deferred"

# --- m2g status against scontrol/squeue ---------------------------------------------------
# The queue counts below need both pending jobs deferred: the batch job at
# submission, the waiting training job by job_submit/m2g's release thread
# (every ReleaseCheckSec=2) once the event is in force.
for j in "$sw" "$df"; do
	tb_wait_for "job $j deferred by the event" 10 tb_comment_has "$j" 'admission=defer' || true
done
rc=0; "$M2G" status >"$T/status" 2>"$T/status.err" || rc=$?
"$M2G" status --json >"$T/status.json" 2>>"$T/status.err" || rc=$?
ok "[[ $rc == 0 ]] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' '$T/status.json'" "m2g status and --json run; the JSON parses"
diag "m2g status:"; show "$T/status"
ok "! grep -q 'plugin_load_from_file\|undefined symbol' '$T/status.err'" \
	"libslurm loads select/m2g's select_cons_tres.so in the m2g command without an error (it only forwards there)"
used_per_rack >"$T/used.scontrol"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for x in d["domains"]:
    print(x["name"], x["gpus_used"])' "$T/status.json" | sort >"$T/used.m2g"
is "$(cat "$T/used.m2g")" "$(cat "$T/used.scontrol")" "status: GPUs used per domain match scontrol's GresUsed"
# What the jobs were given: 8, 4, 2, 12 GPUs on nvl01..04, plus 8 for the placed job.
exp_used() { case $1 in nvl01) echo 8;; nvl02) echo 4;; nvl03) echo 2;; nvl04) echo 12;; esac; }
want=""
for r in nvl01 nvl02 nvl03 nvl04; do
	u=$(exp_used $r); [[ $r == "$rack" ]] && u=$((u + 8))
	want+="$r $u $((72 - u))"$'\n'
done
got=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for x in d["domains"]:
    print(x["name"], x["gpus_used"], x["gpus_free"])' "$T/status.json")
is "$got" "${want%$'\n'}" "status: used/free GPUs per domain are what the jobs took"
ok "grep -q 'nvl01' '$T/status' && grep -q 'nvl04' '$T/status'" "status (text): one line per domain"
ok "grep -q 'dr-obs' '$T/status' && py 'any(e[\"id\"] == \"dr-obs\" for e in d[\"active_events\"])' '$T/status.json'" \
	"status: the active event"
# Queue depth by class, against squeue.
sq_pending() { squeue -h -t PD -o '%i' | wc -l; }
sq_running() { squeue -h -t R -o '%i' | wc -l; }
ok "py 'sum(q[\"pending\"] for q in d[\"queues\"]) == $(sq_pending) and sum(q[\"running\"] for q in d[\"queues\"]) == $(sq_running)' '$T/status.json'" \
	"status: pending and running jobs add up to squeue's ($(sq_pending) pending, $(sq_running) running)"
ok "py '{q[\"class\"]: (q[\"pending\"], q[\"running\"], q[\"deferred\"]) for q in d[\"queues\"]} == {\"inference\": (0, 4, 0), \"finetune\": (0, 1, 0), \"training\": (1, 0, 1), \"batch\": (1, 0, 1)}' '$T/status.json'" \
	"status: queue depth by class (inference 4 running, finetune 1; training 1 and batch 1 pending, both deferred by the event)"
ok "grep -qi 'training' '$T/status' && grep -qi 'batch' '$T/status'" "status (text): queues by class"

# --- m2g status --plot ---------------------------------------------------------------------
rm -f "$T/status.png"
rc=0; "$M2G" status --plot "$T/status.png" >"$T/plot.out" 2>&1 || rc=$?
ok "[[ $rc == 0 && -s '$T/status.png' ]]" "status --plot writes a file"
show "$T/plot.out"
ok "[[ \$(head -c 8 '$T/status.png' | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]]" "the plot is a PNG (magic bytes)"
cat >"$T/png.py" <<'EOF'
# PNG facts without PIL: size from IHDR; distinct colours after zlib and unfiltering.
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
pos, idat, ihdr = 8, b"", None
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        ihdr = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
w, h, depth, ctype, _, _, interlace = ihdr
if sys.argv[2] == "size":
    print(f"{w}x{h}")
    sys.exit(0)
assert depth == 8 and interlace == 0, (depth, interlace)
bpp = {2: 3, 6: 4, 0: 1, 4: 2}[ctype]
raw, stride = zlib.decompress(idat), w * bpp
prev, colours, i = bytearray(stride), set(), 0
for _ in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
    i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b, c = prev[x], (prev[x - bpp] if x >= bpp else 0)
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        colours.add(bytes(line[x:x + bpp]))
    prev = line
print(len(colours))
EOF
is "$(python3 "$T/png.py" "$T/status.png" size 2>&1)" 1600x900 "the PNG's IHDR says 1600x900 (the documented size)"
ncol=$(python3 "$T/png.py" "$T/status.png" colours 2>&1 || true)
ok "[[ '$ncol' =~ ^[0-9]+\$ ]] && (( ncol > 8 ))" "the plot is not blank: $ncol distinct colours (> 8)"

# --- m2g job after slurmctld forgot the job: accounting ---------------------------------------
deadline=$((SECONDS + 90))
while scontrol -o show job "$fin" >/dev/null 2>&1 && ((SECONDS < deadline)); do sleep 2; done
ok "! scontrol -o show job $fin" "the finished job has left slurmctld (MinJobAge)"
rc=0; "$M2G" job "$fin" --json >"$T/job2.json" 2>"$T/job2.err" || rc=$?
ok "[[ $rc == 0 ]] && py 'd[\"job\"] == $fin and d[\"from\"] == \"accounting\"' '$T/job2.json'" "m2g job (finished, purged from slurmctld) reads accounting"
show "$T/job2.json"
el=$(sacct_field "$fin" ElapsedRaw)
ag=$(sacct_field "$fin" AllocTRES | tr ',' '\n' | sed -n 's/^gres\/gpu=//p')
diag "sacct: ElapsedRaw=$el s, gres/gpu=$ag"
for f in job1 job2; do
	ok "py 'abs(d[\"gpu_hours\"] - $el * $ag / 3600.0) <= 0.05 * $el * $ag / 3600.0' '$T/$f.json'" \
		"m2g job ($f): GPU-hours within 5% of sacct's elapsed x GPUs ($el s x $ag)"
done
ok "py 'd[\"cost\"] > 0 and abs(d[\"cost\"] - d[\"energy_kwh\"] * 0.25) <= 0.005 + 1e-9 and d[\"currency\"] == \"EUR\"' '$T/job2.json'" \
	"m2g job: cost = energy x EnergyPricePerKWh (0.25 EUR/kWh)"
rc=0; "$M2G" job "$fin" >"$T/job2.txt" 2>"$T/job2.err" || rc=$?
ok "[[ $rc == 0 ]] && grep -qi 'gpu-hours\\|gpu hours' '$T/job2.txt' && grep -q 'EUR' '$T/job2.txt'" "m2g job (text): GPU-hours and cost in EUR"
diag "m2g job $fin:"; show "$T/job2.txt"

# forecast --history: accounting's jobs teach it run times (the finished
# job's run time / limit) and arrivals (today's submissions, replayed).
rc=0; "$M2G" forecast --json --history 1 >"$T/fc-hist.json" 2>"$T/fc-hist.err" || rc=$?
ok "[[ $rc == 0 ]] && py 'd[\"arrivals\"] >= 1 and d[\"runtime_history\"] >= 1 and not any(n.startswith(\"--history:\") for n in d[\"notes\"]) and any(\"ended before\" in n for n in d[\"notes\"])' '$T/fc-hist.json'" \
	"forecast --history 1: run times from the jobs accounting saw end, its submissions replayed as arrivals"
diag "$(python3 -c 'import json,sys; print("; ".join(json.load(open(sys.argv[1]))["notes"]))' "$T/fc-hist.json")"

rc=0; "$M2G" explain "$fin" --json >"$T/x-done.json" 2>"$T/x-done.err" || rc=$?
ok "[[ $rc == 0 ]] && py 'd[\"verdict\"] == \"done\"' '$T/x-done.json'" "explain of a job only accounting still has: verdict done"

# --- an OpenADR 3 IMPORT_CAPACITY_LIMIT in the feed: a limit admission and the forecast see --------
lim_at=$(( $(date +%s) / 900 * 900 + 7200 ))
ADR_EVENTS='[{"id": "vtn-ev-1", "createdDateTime": "2026-01-01T00:00:00Z", "modificationDateTime": "2026-01-01T00:00:00Z",
  "objectType": "EVENT", "programID": "capacity",
  "payloadDescriptors": [{"objectType": "EVENT_PAYLOAD_DESCRIPTOR", "payloadType": "IMPORT_CAPACITY_LIMIT", "units": "KW"}],
  "intervalPeriod": {"start": "'"$(date -u -d "@$lim_at" +%Y-%m-%dT%H:%M:%SZ)"'", "duration": "PT1H"},
  "intervals": [{"id": 0, "payloads": [{"type": "IMPORT_CAPACITY_LIMIT", "values": [1500]}]}]}]'
EVENTS='[]' write_feed
deadline=$((SECONDS + 60))
until grep -q 'vtn-ev-1' "$STATUS" 2>/dev/null || ((SECONDS >= deadline)); do sleep 1; done
ok "grep -q vtn-ev-1 '$STATUS'" "job_submit/m2g took the feed with the OpenADR event (SignalsStatusFile)"
rc=0; "$M2G" signals show --json >"$T/sig-adr.json" 2>"$T/sig-adr.err" || rc=$?
ok "[[ $rc == 0 ]] && py \"any(e['id'] == 'vtn-ev-1/0' and e['limit_kw'] == 1500 for e in d['events'])\" '$T/sig-adr.json'" \
	"m2g signals show: the IMPORT_CAPACITY_LIMIT interval is event vtn-ev-1/0, limit_kw 1500"
[[ $rc == 0 ]] || show "$T/sig-adr.err"
rc=0; "$M2G" forecast --json >"$T/fc-lim.json" 2>"$T/fc-lim.err" || rc=$?
ok "[[ $rc == 0 ]] && py \"(lambda b: [b[k] for k in range(len(b)) if $lim_at <= d['made_at_epoch'] + 900 * k < $lim_at + 3600] == [1500] * 4 and b[0] == 2000)(d['power'][0]['budget_kw'])\" '$T/fc-lim.json'" \
	"forecast: the site budget is 2000 kW now and at most 1500 kW during the OpenADR interval"

scancel "$f1" "$f2" "$f3" "$f4" "$pl" "$sw" "$df"
done_testing
