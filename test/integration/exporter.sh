#!/usr/bin/env bash
# m2g-exporter against the real testbed (4 NVL72 racks, every m2g plugin,
# the signals feed, StatsDir=): known jobs run (an 18-node strict job on one
# rack, 1-node jobs of two classes, a strict job that cannot fit, a job
# deferred by a demand-response event) and the scraped values must equal
# what Slurm and the feed say: GPUs per NVLink domain, queues per class and
# state, pending reasons, deferrals, events, signal age and state, the
# plugins' decision counters and histograms. Also: the exposition parses,
# other paths are 404, the default address is loopback (its listening
# socket is bound to 127.0.0.1 and does not answer on the machine's
# non-loopback address; 0.0.0.0 does, as the control), scrapes never
# trigger a refresh, SIGTERM stops it; and every metric name the Grafana
# dashboard and the Prometheus rules use is one the exporter declares.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

EXPORTER=${M2G_BUILDDIR:?}/src/exporter/m2g-exporter
SRC=${M2G_SRCDIR:?}
DASHBOARD=$SRC/contrib/grafana/m2g-dashboard.json
RULES=$SRC/contrib/prometheus/m2g-alerts.yml
T=$TB_TMP

# --- what the exporter declares, and who uses it (no testbed needed) ------------------
"$EXPORTER" --list-metrics >"$T/declared.tsv"
cut -f1 "$T/declared.tsv" >"$T/declared"
bad=$(awk -F'\t' 'NF != 4 || $1 !~ /^m2g_[a-z0-9_]+$/ || $2 !~ /^(gauge|counter|histogram)$/ ||
	($2 == "counter") != ($1 ~ /_total$/) || $3 !~ /^(-|[a-z_]+(,[a-z_]+)*)$/ || $4 == "" {print}' "$T/declared.tsv")
is "$bad" "" "--list-metrics: $(wc -l <"$T/declared") metrics, each with a valid name, type, labels and help; counters and only counters end in _total"
missing=$(while read -r m; do grep -q "\`$m\`" "$SRC/doc/metrics.md" || echo "$m"; done <"$T/declared")
is "$missing" "" "doc/metrics.md documents every metric the exporter declares"

# used_names FILE: the m2g_* names a file uses, histogram series folded to their family.
used_names() {
	grep -oE 'm2g_[a-z0-9_]+' "$1" | sort -u | while read -r n; do
		base=${n%_bucket}; base=${base%_sum}; base=${base%_count}
		if [[ $base != "$n" ]] && awk -F'\t' -v b="$base" '$1 == b && $2 == "histogram" {f=1} END {exit !f}' "$T/declared.tsv"; then
			echo "$base"
		else
			echo "$n"
		fi
	done | sort -u
}
dash=$(python3 - "$DASHBOARD" <<'EOF' 2>&1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["title"] and d["uid"] and d["schemaVersion"] >= 30, "title, uid, schemaVersion"
panels = [p for p in d["panels"] if p["type"] != "row"]
for p in panels:
    assert p["title"] and p["targets"] and all(t["expr"] for t in p["targets"]), p.get("title")
    assert p["datasource"]["uid"] == "${DS_PROMETHEUS}", p["title"]
ids = [p["id"] for p in d["panels"]]
assert len(ids) == len(set(ids)), "panel ids unique"
print("ok %d panels" % len(panels))
EOF
) || true
ok "[[ '$dash' == ok* ]]" "contrib/grafana/m2g-dashboard.json is a Grafana dashboard: $dash"
used_names "$DASHBOARD" >"$T/dash.used"
is "$(comm -23 "$T/dash.used" <(sort "$T/declared"))" "" "the dashboard uses only metrics the exporter declares ($(wc -l <"$T/dash.used") of them)"
cat >"$T/rules.py" <<'EOF'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
names = set()
for g in d["groups"]:
    assert g["name"] and g["rules"], g
    for r in g["rules"]:
        assert set(r) <= {"alert", "expr", "for", "labels", "annotations"}, r
        assert r["alert"] and r["expr"] and r["labels"]["severity"], r
        assert r["annotations"]["summary"] and r["annotations"]["description"], r
        names.add(r["alert"])
print(" ".join(sorted(names)))
EOF
alerts=$(python3 "$T/rules.py" "$RULES" 2>"$T/rules.err") || alerts="invalid: $(tail -n1 "$T/rules.err")"
is "$alerts" "M2GDemandResponseActive M2GDomainDegraded M2GExporterDown M2GSignalsStale M2GStrictJobsWaitingTooLong" \
	"contrib/prometheus/m2g-alerts.yml: valid rule groups with the expected alerts (promtool is not installed: checked with python3 yaml)"
used_names "$RULES" >"$T/rules.used"
is "$(comm -23 "$T/rules.used" <(sort "$T/declared"))" "" "the alert rules use only metrics the exporter declares ($(wc -l <"$T/rules.used") of them)"

# --- a testbed with the signals feed and the plugins' counters ---------------------------
cat >"$T/exporter.conf" <<'EOF'
SignalsFile=@DIR@/run/signals.json
SignalsStatusFile=@DIR@/run/signals-status.json
SignalsPollSec=1
SignalsTTLSec=60
ReleaseCheckSec=2
StatsDir=@DIR@/run
EOF
tb_up --racks 4 --conf-extra "$T/exporter.conf"
FEED=$TB_DIR/run/signals.json
STATUS=$TB_DIR/run/signals-status.json
LOG=$TB_DIR/log/slurmctld.log

# write_feed: $EVENTS, $HEALTH (JSON) and $GEN (epoch s, default now), replaced atomically.
write_feed() {
	local health=${HEALTH:-"{}"}
	cat >"$FEED.tmp" <<-EOF
		{"schema": "m2g.signals/v1", "generated_at": ${GEN:-$(date +%s)}, "source": "exporter.sh",
		 "power": {"site": {"budget_kw": 2000, "draw_kw": 100}},
		 "events": ${EVENTS:-[]}, "health": $health}
	EOF
	mv -f "$FEED.tmp" "$FEED"
}
write_feed

# start_exporter NAME ARGS...: run it in the background under `timeout` (so a
# test that dies early cannot leave it running for long); NAME_PID is the
# PID to stop, $T/NAME.err its log. Returns once it serves (or failed).
start_exporter() {
	local name=$1
	shift
	timeout 600 "$EXPORTER" "$@" >/dev/null 2>"$T/$name.err" &
	printf -v "${name}_PID" %s "$!"
	tb_await_server "m2g-exporter ($name)" "$!" "$T/$name.err" '/serving http\|error:/p' >/dev/null
}
stop_exporter() { # stop_exporter PID: SIGTERM, then its exit status
	local rc=0
	kill -TERM "$1" 2>/dev/null || true
	wait "$1" || rc=$?
	return "$rc"
}

start_exporter EXP --listen 127.0.0.1:0 --interval 1 || true
PORT=$(sed -nE 's|.*serving http://127\.0\.0\.1:([0-9]+)/metrics.*|\1|p' "$T/EXP.err" 2>/dev/null || true)
ok "[[ -n '$PORT' ]]" "the exporter serves on a free loopback port (--listen 127.0.0.1:0 picked ${PORT:-none})"
[[ -n $PORT ]] || { diag "$(cat "$T/EXP.err")"; exit 1; }
URL=http://127.0.0.1:$PORT

scrape() { curl -sf --max-time 5 "$URL/metrics" >"$T/m"; }
# val SERIES: its value in the last scrape ("" when absent).
val() { awk -v s="$1" '$1 == s {print $2}' "$T/m"; }
# wait_val SERIES EXPECTED [TIMEOUT]: scrape until SERIES has that value.
scraped_is() { scrape || { echo "scrape of $URL failed"; return 1; }; echo "$1 = '$(val "$1")'"; [[ $(val "$1") == "$2" ]]; }
wait_val() { tb_wait_for "$1 == $2 in the scrape" "${3:-20}" scraped_is "$1" "$2"; }
# refreshed_after EPOCH: the exporter's last refresh began after EPOCH.
refreshed_after() {
	local last
	scrape || { echo "scrape of $URL failed"; return 1; }
	last=$(val m2g_exporter_last_refresh_timestamp_seconds)
	echo "m2g_exporter_last_refresh_timestamp_seconds ${last:-absent}, wanted > $1"
	[[ -n $last ]] && (( ${last%.*} > $1 ))
}

# --- known jobs ---------------------------------------------------------------------------
sub() { sbatch --parsable --wrap 'sleep 600' "$@"; }
A=$(sub -N18 --exclusive --gres=gpu:4 --m2g-class=training --m2g-topology=strict:nvlink)
check "an 18-node strict:nvlink training job runs" wait_job_state "$A" RUNNING 60
rackA=$(job_nodes "$A" | sed -E 's/^r([0-9]+)n.*/\1/' | sort -u)
is "$(wc -w <<<"$rackA")" 1 "it runs in one rack (r$rackA)"
JOBS=("$A")
# One batch job on the last node of every other rack, so no rack stays whole.
for r in 01 02 03 04; do
	[[ $r == "$rackA" ]] && continue
	JOBS+=("$(sub -N1 --gres=gpu:4 --m2g-class=batch -w "r${r}n18")")
done
JOBS+=("$(sub -N1 --gres=gpu:4 --m2g-class=inference)" "$(sub -N1 --gres=gpu:4 --m2g-class=inference)")
JOBS+=("$(sub -N1 --gres=gpu:2 --m2g-class=batch)")
started=0
for j in "${JOBS[@]}"; do wait_job_state "$j" RUNNING 60 && started=$((started + 1)); done
is "$started" "${#JOBS[@]}" "all ${#JOBS[@]} jobs run (1 training, 2 inference, 4 batch)"
S=$(sub -N18 --exclusive --gres=gpu:4 --m2g-class=inference --m2g-topology=strict:nvlink)
JOBS+=("$S")
admin_comment() { squeue -h -t all -j "$1" -O admin_comment:600 | sed 's/ *$//'; }
tb_wait_for "select/m2g's verdict on job $S" 20 tb_comment_has "$S" waiting || true
ok "[[ '$(job_state "$S")' == PENDING && '$(admin_comment "$S")' == *'waiting policy=strict:nvlink'* ]]" \
	"a strict 18-node job with no whole rack free waits, and select/m2g says so"

# --- a demand-response event: a deferrable job is deferred ----------------------------------
now=$(date +%s)
EVENTS="[{\"id\": \"dr-exp\", \"start\": $((now - 60)), \"end\": $((now + 3600)), \"curtail_pct\": 50, \"scope\": \"site\"}]"
write_feed
ok "wait_val m2g_active_events 1 20" "the event is active in the scrape (m2g_active_events 1)"
tb_await_feed "$FEED" "$STATUS"
D=$(sub -N1 --gres=gpu:4 --m2g-class=training)
JOBS+=("$D")
tb_wait_for "job $D deferred by dr-exp" 10 tb_comment_has "$D" dr-exp || true
ok "[[ '$(job_state "$D")' == PENDING && '$(admin_comment "$D")' == *'admission=defer'*dr-exp* ]]" \
	"a training job submitted during the event is deferred by it"

# --- the scrape equals the testbed's state ------------------------------------------------
write_feed  # the agent's next update (same content, generated now)
# job_submit/m2g holds it (the exporter reads its status file), then an
# exporter refresh that began after that.
tb_await_feed "$FEED" "$STATUS"
held_at=$(date +%s)
tb_wait_for "an exporter refresh after the feed was read" 10 refreshed_after "$held_at" || true
scrape
# Testbed truth: GPUs in use per rack, from scontrol's AllocTRES gres/gpu=N
# (absent: none), 4 GPUs on each of the 18 nodes of a rack.
scontrol -o show node | awk '{
	r = ""; g = 0
	for (i = 1; i <= NF; i++) {
		if ($i ~ /^NodeName=r[0-9]+n/) r = substr($i, 11, 2)
		if ($i ~ /^AllocTRES=/ && match($i, /gres\/gpu=[0-9]+/)) g = substr($i, RSTART + 9, RLENGTH - 9)
	}
	if (r != "") u[r] += g
} END {for (r in u) printf "%s %d\n", r, u[r]}' | sort >"$T/used"
is "$(cut -d' ' -f1 "$T/used" | xargs)" "01 02 03 04" "scontrol reports the four racks"
got="" want=""
while read -r r used; do
	want+="nvl$r used=$used free=$((72 - used)) degraded=0 flag=0;"
	got+="nvl$r used=$(val "m2g_domain_gpus{domain=\"nvl$r\",state=\"used\"}") free=$(val "m2g_domain_gpus{domain=\"nvl$r\",state=\"free\"}")"
	got+=" degraded=$(val "m2g_domain_gpus{domain=\"nvl$r\",state=\"degraded\"}") flag=$(val "m2g_domain_degraded{domain=\"nvl$r\"}");"
done <"$T/used"
is "$got" "$want" "m2g_domain_gpus and m2g_domain_degraded per domain equal scontrol's AllocTRES"
diag "${want//;/ }"
frag=$(awk '{f = 72 - $2; t += f; if ($2 > 0) m += f} END {printf "%.6f", t ? m / t : 0}' "$T/used")
is "$(printf '%.6f' "$(val m2g_fragmentation_ratio)")" "$frag" "m2g_fragmentation_ratio: free GPUs in racks with used ones / all free GPUs ($frag)"
is "$(val m2g_whole_free_domains)" 0 "m2g_whole_free_domains: no rack is whole (every rack has a job)"

q() { val "m2g_queue_jobs{class=\"$1\",state=\"$2\"}"; }
is "$(q training running)/$(q training pending)/$(q training deferred)" "1/0/1" "m2g_queue_jobs training: 1 running, 1 deferred"
is "$(q inference running)/$(q inference pending)/$(q inference deferred)" "2/1/0" "m2g_queue_jobs inference: 2 running, 1 pending"
is "$(q batch running)/$(q batch pending)/$(q batch deferred)" "4/0/0" "m2g_queue_jobs batch: 4 running"
sum_state() { awk -v s="$1" '$1 ~ /^m2g_queue_jobs\{/ && $1 ~ "state=\"" s "\"" {n += $2} END {print n + 0}' "$T/m"; }
is "$(sum_state running) $(($(sum_state pending) + $(sum_state deferred)))" \
	"$(squeue -h -t R | wc -l) $(squeue -h -t PD | wc -l)" "m2g_queue_jobs summed over classes equals squeue's running and pending counts"
is "$(val m2g_deferred_jobs)" 1 "m2g_deferred_jobs 1"
is "$(val 'm2g_pending_jobs{reason="deferred:event"}')" 1 "m2g_pending_jobs{reason=\"deferred:event\"} 1 (the job the event deferred)"
is "$(val 'm2g_pending_jobs{reason="waiting:nvlink-domain"}')" 1 "m2g_pending_jobs{reason=\"waiting:nvlink-domain\"} 1 (the strict job)"
is "$(val 'm2g_event_info{id="dr-exp",scope="site"}') $(val 'm2g_event_end_timestamp_seconds{id="dr-exp",scope="site"}')" \
	"1 $((now + 3600))" "m2g_event_info and its end time name the event"
is "$(val 'm2g_power_effective_budget_kw{scope="site",name="site"}') $(val 'm2g_power_headroom_kw{scope="site",name="site"}')" \
	"1000 900" "site power: 2000 kW curtailed 50% = 1000 kW, minus 100 kW drawn = 900 kW headroom"
age=$(val m2g_signals_age_seconds)
ok "[[ -n '$age' ]] && (( $age <= 10 ))" "m2g_signals_age_seconds is small (${age:-absent} s)"
is "$(val 'm2g_signals_state{state="fresh"}')$(val 'm2g_signals_state{state="stale"}') $(val m2g_signals_ttl_seconds)" "10 60" \
	"m2g_signals_state: fresh; m2g_signals_ttl_seconds 60 (SignalsTTLSec)"
is "$(val m2g_exporter_up) $(val m2g_exporter_refresh_errors_total)" "1 0" "m2g_exporter_up 1, no refresh errors"
last=$(val m2g_exporter_last_refresh_timestamp_seconds)
ok "[[ -n '$last' ]] && (( $(date +%s) - $last <= 5 ))" "m2g_exporter_last_refresh_timestamp_seconds is recent"

# --- the plugins' counters (published every 10 s) ----------------------------------------------
counters_in() {
	scrape || { echo "scrape of $URL failed"; return 1; }
	local d p
	d=$(val 'm2g_decisions_total{plugin="admission",verdict="defer"}') p=$(val m2g_placement_domains_count)
	echo "admission defer decisions ${d:-absent}, placements counted ${p:-absent} (want >= $started)"
	(( ${d:-0} >= 1 && ${p:-0} >= started ))
}
tb_wait_for "the plugins' published counters" 40 counters_in || true
ok "[[ -f '$TB_DIR/run/select.json' && -f '$TB_DIR/run/admission.json' ]]" "select/m2g and job_submit/m2g publish StatsDir/select.json and admission.json"
placed=$(val 'm2g_decisions_total{plugin="select",verdict="placed"}')
ok "(( ${placed:-0} >= 1 ))" "m2g_decisions_total{plugin=\"select\",verdict=\"placed\"} > 0 ($placed)"
ok "(( $(val 'm2g_decisions_total{plugin="select",verdict="waiting"}') >= 1 ))" "select counted the strict job's waiting decisions"
admits=$(val 'm2g_decisions_total{plugin="admission",verdict="admit"}')
ok "(( ${admits:-0} >= ${#JOBS[@]} - 1 ))" "m2g_decisions_total{plugin=\"admission\",verdict=\"admit\"}: every admitted submission ($admits)"
is "$(val 'm2g_decisions_total{plugin="admission",verdict="defer"}')" 1 "m2g_decisions_total{plugin=\"admission\",verdict=\"defer\"} 1"
n=$(val m2g_placement_domains_count)
ok "(( ${n:-0} >= $started ))" "m2g_placement_domains counts every job started ($n >= $started)"
is "$(val 'm2g_placement_domains_bucket{le="1"}')" "$n" "every placement used one NVLink domain (le=\"1\" bucket == _count)"
is "$(val m2g_nvlink_containment_ratio)" 1 "m2g_nvlink_containment_ratio 1: every job that fits a domain got one"
ok "(( $(val 'm2g_decision_duration_seconds_count{plugin="admission"}') >= ${#JOBS[@]} ))" \
	"m2g_decision_duration_seconds{plugin=\"admission\"} timed every submission"

# The whole exposition: the 0.0.4 text format, HELP/TYPE before each family's
# samples, each family together, no duplicate series, histograms consistent.
cat >"$T/expo.py" <<'EOF'
import math, re, sys
name_re = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
label_re = r'[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*"'
sample = re.compile(r"^(%s)(\{(%s(,%s)*)?\})? (\S+)$" % (name_re, label_re, label_re))
errors, types, seen, done, current, series = [], {}, set(), set(), None, {}
def family(n):
    for suf in ("_bucket", "_sum", "_count"):
        if n.endswith(suf) and types.get(n[: -len(suf)]) == "histogram":
            return n[: -len(suf)]
    return n
for i, line in enumerate(open(sys.argv[1]).read().splitlines(), 1):
    if line.startswith("# HELP ") or line.startswith("# TYPE "):
        parts = line.split(" ", 3)
        if len(parts) < 4 or not re.fullmatch(name_re, parts[2]):
            errors.append("%d: bad comment: %s" % (i, line))
        if parts[1] == "TYPE":
            if parts[3] not in ("counter", "gauge", "histogram", "summary", "untyped"):
                errors.append("%d: bad type %s" % (i, parts[3]))
            types[parts[2]] = parts[3]
        continue
    m = sample.match(line)
    if not m:
        errors.append("%d: not a sample: %r" % (i, line)); continue
    name, labels, value = m.group(1), m.group(3) or "", m.group(5)
    try:
        v = float(value)
    except ValueError:
        errors.append("%d: bad value %r" % (i, value)); continue
    fam = family(name)
    if fam not in types:
        errors.append("%d: %s has no TYPE line before it" % (i, name))
    if fam != current:
        if fam in done:
            errors.append("%d: family %s is split" % (i, fam))
        if current: done.add(current)
        current = fam
    key = name + "{" + labels + "}"
    if key in seen:
        errors.append("%d: duplicate series %s" % (i, key))
    seen.add(key)
    series[key] = v
# Histograms: cumulative buckets never decrease, +Inf == _count.
hist = {}
for key, v in series.items():
    name, labels = key.split("{", 1)
    if name.endswith("_bucket"):
        le = re.search(r'le="([^"]*)"', labels).group(1)
        rest = re.sub(r',?le="[^"]*"', "", labels).lstrip(",")
        hist.setdefault((name[:-7], rest), []).append((float(le), v))
for (fam, rest), buckets in hist.items():
    buckets.sort()
    counts = [c for _, c in buckets]
    if counts != sorted(counts):
        errors.append("%s{%s: buckets decrease" % (fam, rest))
    if not math.isinf(buckets[-1][0]):
        errors.append("%s{%s: no +Inf bucket" % (fam, rest))
    if series.get(fam + "_count{" + rest) != buckets[-1][1]:
        errors.append("%s{%s: +Inf bucket %s != _count %s" % (fam, rest, buckets[-1][1], series.get(fam + "_count{" + rest)))
    if fam + "_sum{" + rest not in series:
        errors.append("%s{%s: no _sum" % (fam, rest))
print("\n".join(errors) if errors else "ok %d series, %d families, %d histograms" % (len(series), len(types), len(hist)))
EOF
res=$(python3 "$T/expo.py" "$T/m")
ok "[[ '$res' == ok* ]]" "the exposition parses as text format 0.0.4, histograms consistent (+Inf bucket == _count): $res"
[[ $res == ok* ]] || diag "$res"
is "$(curl -s -o /dev/null -w '%{http_code} %{content_type}' "$URL/metrics")" "200 text/plain; version=0.0.4; charset=utf-8" \
	"/metrics: 200 with the 0.0.4 content type"
is "$(curl -s -o /dev/null -w '%{http_code}' "$URL/nothing-here")" 404 "other paths: 404"
# grep without -q reads the whole page: -q would stop at the link and, under
# pipefail, curl's write error on the closed pipe (the page is larger than a
# pipe's buffer) would fail the check.
ok "curl -sf '$URL/' | grep 'href=\"/metrics\"' >/dev/null" "/ is a page that links to /metrics"
is "$(curl -s -o /dev/null -w '%{http_code}' -X POST -d x=1 "$URL/metrics")" 405 "POST: 405"

# --- the forecast: made in its own thread, served as metrics and as JSON, never per scrape ------
fc_json() { curl -sf --max-time 5 "$URL/forecast.json" >"$T/fc.json"; }
tb_wait_for "/forecast.json serves a forecast" 60 fc_json || true
ok "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if len(d[\"flexibility\"]) == 15 and d[\"power\"][0][\"scope\"] == \"site\" else 1)' '$T/fc.json'" \
	"/forecast.json: m2g forecast --json's object, with the flexibility curve (15 offers)"
scrape || true
fc_at=$(val m2g_forecast_timestamp_seconds)
ok "[[ -n '$fc_at' ]] && python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))[\"made_at_epoch\"] == int(float(sys.argv[2])) else 1)' '$T/fc.json' '$fc_at'" \
	"m2g_forecast_timestamp_seconds ($fc_at) is the served JSON's made_at"
cat >"$T/fc-vs-json.py" <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1]))
ahead = {"1h": 3600, "6h": 21600, "24h": 86400}
q = {"0.1": "p10_kw", "0.5": "p50_kw", "0.9": "p90_kw"}
bands = {(b["scope"], b["name"]): b for b in d["power"]}
offers = {("%g" % o["depth_pct"], "%g" % (o["duration_s"] / 3600)): o for o in d["flexibility"]}
bad, n = [], 0
for line in open(sys.argv[2]):
    m = re.match(r'm2g_forecast_power_kw\{scope="([^"]*)",name="([^"]*)",quantile="([^"]*)",ahead="([^"]*)"\} (\S+)', line)
    if m:
        b = bands[(m.group(1), m.group(2))]
        want = b[q[m.group(3)]][int(ahead[m.group(4)] / d["step_s"])]
    else:
        m = re.match(r'm2g_flex_available_kw\{depth_pct="([^"]*)",duration_h="([^"]*)"\} (\S+)', line)
        if not m:
            continue
        want = offers[(m.group(1), m.group(2))]["shed_mean_kw"]
    n += 1
    got = float(line.split()[-1])
    if abs(got - want) > 0.051:
        bad.append("%s (JSON %s)" % (line.strip(), want))
print("\n".join(bad) if bad else "ok %d series" % n)
EOF
res=$(python3 "$T/fc-vs-json.py" "$T/fc.json" "$T/m" 2>&1)
ok "[[ '$res' == ok* && '$res' != 'ok 0 series' ]]" \
	"every m2g_forecast_power_kw and m2g_flex_available_kw series equals the served JSON's figure: $res"
[[ $res == ok* ]] || diag "$res"
is "$(grep -c '^m2g_flex_available_kw{' "$T/m")" 15 "m2g_flex_available_kw: the curve, 10-50% for 1, 3 and 10 h"
ok "grep -q '^m2g_forecast_pending_starts{within=\"never\"} ' '$T/m' && grep -q '^m2g_flex_met{depth_pct=\"10\",duration_h=\"1\"} [01]\$' '$T/m'" \
	"m2g_forecast_pending_starts and m2g_flex_met are served"
sleep 2
scrape || true
is "$(val m2g_forecast_timestamp_seconds)" "$fc_at" "scrapes between two forecasts serve the same forecast (--forecast-interval 60; none per scrape)"

# --- the operator page at /, in headless Chromium (Debian's package) ------------------------
# The page draws itself from /status.json and /forecast.json; what it shows
# (text and data-* attributes) must be what those say.
cat >"$T/ui-check.py" <<'EOF'
import json, math, sys
from html.parser import HTMLParser

class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.els, self.stack = [], []
    def handle_starttag(self, tag, attrs):
        e = {"tag": tag, "a": dict(attrs), "text": "", "cells": []}
        if self.stack and tag == "td":
            for p in reversed(self.stack):
                if p["tag"] == "tr":
                    p["cells"].append(e)
                    break
        self.els.append(e)
        if tag not in ("meta", "br", "img", "input", "link", "circle", "path", "polyline"):
            self.stack.append(e)
    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()["tag"] == tag:
                break
    def handle_data(self, data):
        for e in self.stack:
            e["text"] += data

page = Page()
page.feed(open(sys.argv[1]).read())
st, fc = json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
bad = []
def want(cond, what):
    if not cond:
        bad.append(what)
def num_eq(a, b):
    return (a in ("", None) and b is None) or (a not in ("", None) and b is not None and abs(float(a) - float(b)) < 1e-6)
body = [e for e in page.els if e["tag"] == "body"][0]
want(body["a"].get("data-ready") == "1", "page not ready: data-ready=%r" % body["a"].get("data-ready"))
want(body["a"].get("data-forecastmadeat", body["a"].get("data-forecast-made-at")) == str(fc["made_at_epoch"]),
     "forecast made_at on the page %r, JSON %s" % (body["a"], fc["made_at_epoch"]))
racks = {e["a"]["data-name"]: e for e in page.els if "rack" in e["a"].get("class", "").split()}
want(sorted(racks) == sorted(d["name"] for d in st["domains"]), "racks %s vs %s" % (sorted(racks), [d["name"] for d in st["domains"]]))
for d in st["domains"]:
    r = racks.get(d["name"])
    if not r:
        continue
    for k in ("gpus_used", "gpus_free", "gpus_degraded", "gpus_total"):
        want(r["a"].get("data-" + k.replace("_", "-")) == str(d[k]), "%s %s: page %r, JSON %s" % (d["name"], k, r["a"].get("data-" + k.replace("_", "-")), d[k]))
    want(r["a"].get("data-jobs") == ",".join(str(j) for j in d["jobs"]), "%s jobs: page %r, JSON %s" % (d["name"], r["a"].get("data-jobs"), d["jobs"]))
    shown = "%d used · %d free · %d degraded of %d GPUs" % (d["gpus_used"], d["gpus_free"], d["gpus_degraded"], d["gpus_total"])
    want(shown in r["text"], "%s shows %r, not %r" % (d["name"], r["text"], shown))
    for j in d["jobs"]:
        want(str(j) in r["text"], "%s does not show job %s" % (d["name"], j))
site = [p for p in st["power"] if p["scope"] == "site"][0]
ids = {e["a"]["id"]: e for e in page.els if "id" in e["a"]}
want(num_eq(ids["site-draw"]["a"].get("data-kw"), site["draw_kw"]), "site draw %r vs %s" % (ids["site-draw"]["a"], site["draw_kw"]))
want(num_eq(ids["site-budget"]["a"].get("data-kw"), site["effective_kw"]), "site budget %r vs %s" % (ids["site-budget"]["a"], site["effective_kw"]))
b = [x for x in fc["power"] if x["scope"] == "site"][0]
rows = [e for e in page.els if e["tag"] == "tr" and e["a"].get("class") == "band"]
per_hour = max(1, round(3600 / fc["step_s"]))
want(len(rows) == math.ceil(len(b["p50_kw"]) / per_hour), "%d band rows for %d points" % (len(rows), len(b["p50_kw"])))
for r in rows:
    k = int(r["a"]["data-k"])
    for q in ("p10", "p50", "p90"):
        want(num_eq(r["a"]["data-" + q], b[q + "_kw"][k]), "band %d %s: page %s, JSON %s" % (k, q, r["a"]["data-" + q], b[q + "_kw"][k]))
    want([c["text"] for c in r["cells"]][2] == "%.1f" % b["p50_kw"][k], "band %d P50 shown %r, JSON %s" % (k, [c["text"] for c in r["cells"]], b["p50_kw"][k]))
flex = [e for e in page.els if e["tag"] == "tr" and e["a"].get("class") == "flex"]
want(len(flex) == len(fc["flexibility"]), "%d flexibility rows, JSON %d" % (len(flex), len(fc["flexibility"])))
for r, o in zip(flex, fc["flexibility"]):
    want(num_eq(r["a"]["data-kw"], o["shed_mean_kw"]) and r["a"]["data-met"] == ("1" if o["met"] else "0")
         and r["cells"][2]["text"] == "%.1f" % o["shed_mean_kw"],
         "flex %s%%/%sh: page %r %r, JSON %s %s" % (o["depth_pct"], o["duration_s"] / 3600, r["a"], [c["text"] for c in r["cells"]], o["shed_mean_kw"], o["met"]))
jobs = [e for e in page.els if e["tag"] == "tr" and e["a"].get("class") == "job"]
want([int(e["a"]["data-job"]) for e in jobs] == [j["job"] for j in fc["jobs"]], "pending jobs on the page %s, JSON %s" % ([e["a"]["data-job"] for e in jobs], [j["job"] for j in fc["jobs"]]))
want(fc["running"] > 0 and max(b["p50_kw"]) > 0, "the forecast has no running jobs or no power: running %s" % fc["running"])
want(any(e["tag"] == "path" for e in page.els) and any(e["tag"] == "polyline" for e in page.els), "no chart drawn")
want(not [e for e in page.els if e["tag"] in ("script", "link", "img") and (e["a"].get("src") or e["a"].get("href"))],
     "the page loads an external asset")
print("; ".join(bad) if bad else "ok: %d racks, %d band rows, %d offers, %d pending jobs, site draw and budget" % (len(racks), len(rows), len(flex), len(jobs)))
EOF
CHROMIUM=$(command -v chromium || true)
if [[ -z $CHROMIUM ]]; then
	ok 1 "chromium is installed (contrib/m2g-bootstrap installs Debian's chromium): the operator page is not checked"
else
	chrome() {
		timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
			--user-data-dir="$T/chromium" --virtual-time-budget=15000 "$@" 2>>"$T/chromium.err"
	}
	# An exporter of its own, started now that jobs run, so that its first
	# forecast has them; --forecast-interval 3600: that forecast stays.
	start_exporter UI --listen 127.0.0.1:0 --interval 1 --forecast-interval 3600 || true
	UI_URL=http://127.0.0.1:$(sed -nE 's|.*serving http://127\.0\.0\.1:([0-9]+)/metrics.*|\1|p' "$T/UI.err" 2>/dev/null || true)
	ui_forecast() { curl -sf --max-time 5 "$UI_URL/forecast.json" >"$T/ui-forecast.json"; }
	tb_wait_for "the page's exporter has made its forecast" 60 ui_forecast || true
	# The page, then the JSON it was drawn from; a forecast made in between
	# shows as another made_at: take both again.
	for try in 1 2 3; do
		chrome --dump-dom "$UI_URL/" >"$T/ui.html" || true
		curl -sf "$UI_URL/status.json" >"$T/ui-status.json" || true
		curl -sf "$UI_URL/forecast.json" >"$T/ui-forecast.json" || true
		made=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["made_at_epoch"])' "$T/ui-forecast.json" 2>/dev/null || true)
		grep -q "data-forecast-made-at=\"$made\"" "$T/ui.html" && break
	done
	res=$(python3 "$T/ui-check.py" "$T/ui.html" "$T/ui-status.json" "$T/ui-forecast.json" 2>&1 | tail -1)
	ok "[[ '${res//\'/}' == ok:* ]]" \
		"operator page in headless Chromium shows what /status.json and /forecast.json say: $res"
	[[ $res == ok:* ]] || { diag "$res"; tail -5 "$T/chromium.err" | sed 's/^/#   /'; }
	rm -f "$T/ui.png"
	chrome --window-size=1600,1200 --screenshot="$T/ui.png" "$UI_URL/" >/dev/null || true
	size=$(python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(); print("%dx%d %d" % (struct.unpack(">II", d[16:24]) + (len(d),)) if d[:8] == b"\x89PNG\r\n\x1a\n" else "not a PNG")' "$T/ui.png" 2>&1 || true)
	ok "[[ '$size' == 1600x1200\ * && \${size#* } -gt 20000 ]]" "a screenshot of the operator page: a 1600x1200 PNG with content ($size bytes)"
	# M2G_ARTIFACTS=DIR keeps the page, its JSON and the screenshot for people to look at.
	[[ -n ${M2G_ARTIFACTS:-} ]] && mkdir -p "$M2G_ARTIFACTS" &&
		cp -f "$T/ui.png" "$T/ui.html" "$T/ui-status.json" "$T/ui-forecast.json" "$M2G_ARTIFACTS/" 2>/dev/null || true
	stop_exporter "$UI_PID" || true
fi
diag "scrape excerpt:" $(grep -E '^m2g_(domain_gpus\{domain="nvl'"$rackA"'"|queue_jobs\{class="training"|pending_jobs|decisions_total|nvlink_containment|signals_age|decision_duration_seconds_(bucket|count)\{plugin="admission")' "$T/m" | tr ' ' '=')

# --- a degraded domain, then a stale feed ---------------------------------------------------
rb=$(awk -v a="$rackA" '$1 != a {print $1; exit}' "$T/used")
usedb=$(awk -v r="$rb" '$1 == r {print $2}' "$T/used")
HEALTH="{\"nvlink_fault\": \"nvl$rb\"}" write_feed
ok "wait_val 'm2g_domain_degraded{domain=\"nvl$rb\"}' 1 20" "an NVLink fault on nvl$rb: m2g_domain_degraded{domain=\"nvl$rb\"} 1"
is "$(val "m2g_domain_gpus{domain=\"nvl$rb\",state=\"used\"}")/$(val "m2g_domain_gpus{domain=\"nvl$rb\",state=\"free\"}")/$(val "m2g_domain_gpus{domain=\"nvl$rb\",state=\"degraded\"}")" \
	"$usedb/0/$((72 - usedb))" "its unallocated GPUs count as degraded, none as free"
GEN=$(($(date +%s) - 120)) write_feed
ok "wait_val 'm2g_signals_state{state=\"stale\"}' 1 20" "a feed older than SignalsTTLSec: m2g_signals_state{state=\"stale\"} 1"
age=$(val m2g_signals_age_seconds)
ok "(( ${age:-0} > $(val m2g_signals_ttl_seconds) ))" "m2g_signals_age_seconds ($age) > m2g_signals_ttl_seconds: M2GSignalsStale's condition holds"

# --- scrapes are served from the cache; the default address is loopback ---------------------
# listeners PORT: the local addresses of the TCP sockets listening on PORT.
listeners() { ss -Htln "sport = :$1" | awk '{print $4}' | sort -u | xargs; }
# A non-loopback address of this machine: a listener on loopback only must
# not answer there.
OTHER_IP=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9]+(\.[0-9]+){3}$' | grep -v '^127\.' | head -n1 || true)
# reach IP PORT: an HTTP answer from IP:PORT (no proxy), or a failure.
reach() { curl -s --noproxy '*' --max-time 3 -o /dev/null "http://$1:$2/metrics"; }
start_exporter DEF --interval 3600 || true
if grep -q 'serving http://127.0.0.1:9842/metrics' "$T/DEF.err"; then
	ok 0 "the default address is 127.0.0.1:9842 (the exporter's own log)"
	for ((i = 0; i < 50; i++)); do curl -sf http://127.0.0.1:9842/metrics | awk '$1 == "m2g_exporter_last_refresh_timestamp_seconds" {print $2}'; done |
		sort -u >"$T/refreshes"
	is "$(wc -l <"$T/refreshes")" 1 "50 scrapes in a row are served from one refresh (no Slurm RPC per scrape)"
	is "$(listeners 9842)" 127.0.0.1:9842 "the only socket listening on port 9842 is bound to 127.0.0.1 (ss -Htln)"
	if [[ -n $OTHER_IP ]]; then
		ok "! reach $OTHER_IP 9842" "the default listener does not answer on this machine's non-loopback address $OTHER_IP"
	else
		skip "the default listener does not answer on a non-loopback address" "this machine has no non-loopback IPv4 address"
	fi
elif grep -q 'cannot listen on 127.0.0.1:9842' "$T/DEF.err"; then
	ok 0 "the default address is 127.0.0.1:9842 (loopback; the port is taken here)"
	skip "50 scrapes from one refresh" "port 9842 is in use"
	skip "the only listener on port 9842 is bound to 127.0.0.1" "port 9842 is in use"
	skip "the default listener does not answer on a non-loopback address" "port 9842 is in use"
else
	ok 1 "the default address is 127.0.0.1:9842"
	diag "$(cat "$T/DEF.err")"
fi
stop_exporter "$DEF_PID" || true
is "$(listeners "$PORT")" "127.0.0.1:$PORT" "--listen 127.0.0.1:0: the socket on the port it picked is bound to 127.0.0.1 (ss -Htln)"
if [[ -n $OTHER_IP ]]; then
	ok "! reach $OTHER_IP $PORT" "--listen 127.0.0.1:0: no answer on the non-loopback address $OTHER_IP"
else
	skip "--listen 127.0.0.1:0: no answer on a non-loopback address" "no non-loopback IPv4 address"
fi
start_exporter ANY --listen 0.0.0.0:0 --interval 3600 || true
ok "grep -q 'not a loopback address' '$T/ANY.err'" "an explicit non-loopback --listen is served, with a note in the log"
ANY_PORT=$(sed -nE 's|.*serving http://0\.0\.0\.0:([0-9]+)/metrics.*|\1|p' "$T/ANY.err" | head -n1)
is "$(listeners "${ANY_PORT:-0}")" "0.0.0.0:${ANY_PORT:-?}" "--listen 0.0.0.0:0 binds the wildcard address (ss -Htln)"
if [[ -n $OTHER_IP ]]; then
	# The probe's positive control: the same probe does reach a wildcard listener.
	ok "reach $OTHER_IP ${ANY_PORT:-0}" "--listen 0.0.0.0:0 answers on $OTHER_IP (the probe above can see a listener there)"
else
	skip "--listen 0.0.0.0:0 answers on a non-loopback address" "no non-loopback IPv4 address"
fi
stop_exporter "$ANY_PID" || true

# --- SIGTERM stops it cleanly; no stats errors in slurmctld.log -----------------------------------
rc=0; stop_exporter "$EXP_PID" || rc=$?
ok "[[ $rc == 0 ]] && grep -q 'stopping on SIGTERM' '$T/EXP.err'" "SIGTERM stops the exporter cleanly (status $rc)"
ok "! grep -q 'counters until this is fixed' '$LOG'" "the plugins wrote their counters without errors"
scancel "${JOBS[@]}" 2>/dev/null || true
done_testing
