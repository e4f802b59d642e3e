#!/usr/bin/env bash
# The signals feed format, checked two ways that must agree:
#   doc/signals.schema.json  JSON Schema 2020-12, what a feed writer can run
#                            without m2g (python3-jsonschema);
#   m2g signals validate     the parser the plugins use, which also resolves
#                            names against m2g.conf.
# Every good fixture (and etc/signals.example.json) passes both. Every bad
# fixture is rejected by m2g with the message test/fixtures/signals/bad/cases.tsv
# gives; the ones marked "schema" there are rejected by the schema too, and
# the ones marked "m2g" are not (the schema cannot know m2g.conf, time order,
# id uniqueness or hostlist syntax), so the list stays honest.
# Needs no Slurm daemon. Needs python3-jsonschema (contrib/m2g-bootstrap).
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

SRC=${M2G_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
M2G=${M2G_BUILDDIR:-$SRC}/src/cli/m2g
SIG=$SRC/test/fixtures/signals
CONF=$SRC/test/fixtures/nvl72-8rack.conf
SCHEMA=$SRC/doc/signals.schema.json
AT=2026-11-29T21:00:00Z  # judge every feed at this time, whatever the clock says
T=$TB_TMP

# diag_lines TEXT: each line of TEXT as a "# " line.
diag_lines() { while IFS= read -r l; do diag "  $l"; done <<<"$1"; }

# run CMD...: stdout in $T/out, stderr in $err, status in $rc.
run() { rc=0; "$@" >"$T/out" 2>"$T/err" || rc=$?; err=$(cat "$T/err"); }

# schema_check FILE: status 0 valid, 1 invalid (reasons on stdout), 2 no jsonschema.
schema_check() {
	python3 - "$SCHEMA" "$1" <<'EOF'
import json, sys
try:
    import jsonschema
except ImportError:
    print("python3 cannot import jsonschema")
    sys.exit(2)
schema = json.load(open(sys.argv[1]))
validator = jsonschema.Draft202012Validator(schema)
try:
    doc = json.load(open(sys.argv[2]))
except ValueError as e:
    print("not JSON: %s" % e)
    sys.exit(1)
errors = list(validator.iter_errors(doc))
for e in errors:
    print("%s: %s" % ("/".join(str(p) for p in e.absolute_path) or "(top)", e.message))
sys.exit(1 if errors else 0)
EOF
}

if ! python3 -c 'import jsonschema; jsonschema.Draft202012Validator' 2>/dev/null; then
	diag "python3 cannot import jsonschema (2020-12 support): apt-get install python3-jsonschema" \
		"(contrib/m2g-bootstrap installs it); every schema case below fails until then"
fi

rc=0
python3 -c 'import json, sys, jsonschema; jsonschema.Draft202012Validator.check_schema(json.load(open(sys.argv[1])))' \
	"$SCHEMA" >"$T/err" 2>&1 || rc=$?
ok "$rc" "doc/signals.schema.json is a valid JSON Schema 2020-12 document"
((rc == 0)) || diag_lines "$(tail -3 "$T/err")"

# ---- good feeds: both accept them --------------------------------------------------
for f in "$SRC/etc/signals.example.json" "$SIG"/good/*.json; do
	name=${f#"$SRC/"}
	rc=0
	why=$(schema_check "$f") || rc=$?
	ok "$rc" "schema accepts $name"
	((rc == 0)) || diag_lines "$why"
	run "$M2G" signals validate --conf "$CONF" --at "$AT" "$f"
	ok "[[ $rc == 0 && \$(cat $T/out) == '$f: ok: '* ]]" "m2g signals validate accepts $name"
	((rc == 0)) || diag_lines "$err"
done

# ---- bad feeds: m2g rejects each with its message; the schema, those marked so ------
listed=()
while IFS=$'\t' read -r name level message; do
	[[ -z $name || $name == \#* ]] && continue
	listed+=("$name")
	f=$SIG/bad/$name.json
	run "$M2G" signals validate --conf "$CONF" --at "$AT" "$f"
	if [[ $message == *'*' ]]; then
		want="m2g: $f: ${message%\*}"
		status=1
		[[ $rc == 1 && ${err:0:${#want}} == "$want" ]] && status=0
		ok "$status" "m2g rejects bad/$name.json: ${message%\*}..."
		((status == 0)) || diag_lines "got: $err"
	else
		is "$rc:$err" "1:m2g: $f: $message" "m2g rejects bad/$name.json: $message"
	fi
	rc=0
	why=$(schema_check "$f") || rc=$?
	case $level in
	schema)
		ok "$((rc == 1 ? 0 : 1))" "schema rejects bad/$name.json too"
		((rc == 2)) && diag_lines "$why"
		;;
	m2g)
		ok "$((rc == 0 ? 0 : 1))" "schema accepts bad/$name.json (only m2g.conf or the parser can tell)"
		((rc == 0)) || diag_lines "$why"
		;;
	*)
		ok 1 "bad/cases.tsv: level of $name is '$level'; accepted: schema, m2g"
		;;
	esac
done <"$SIG/bad/cases.tsv"

# ---- OpenADR 3 events in a feed are OpenADR 3 events ------------------------------------
# The definition is read in place (../shared/deps, never copied into the project).
ADR=${M2G_OPENADR_DIR:-$SRC/../shared/deps/openadr3-3.1.0}
for f in "$SIG"/good/*.json "$SIG"/bad/openadr-*.json; do
	grep -q '"openadr_events"' "$f" || continue
	name=${f#"$SRC/"}
	if [[ ! -r $ADR/openadr3.yaml ]]; then
		skip "$name: OpenADR 3.1.0 events" "no OpenADR definition at $ADR (../shared/deps; M2G_OPENADR_DIR)"
		continue
	fi
	rc=0
	why=$(python3 "$SRC/test/tools/validate-openadr.py" "$ADR" events "$f") || rc=$?
	ok "$rc" "$name: its openadr_events are valid OpenADR 3.1.0 events (openadr3.yaml, enumerations)"
	((rc == 0)) || diag_lines "$why"
done

unlisted=""
for f in "$SIG"/bad/*.json; do
	n=$(basename "$f" .json)
	[[ " ${listed[*]} " == *" $n "* ]] || unlisted+=" $n"
done
is "$unlisted" "" "every bad fixture is listed in bad/cases.tsv"

done_testing
