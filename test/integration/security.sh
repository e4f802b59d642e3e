#!/usr/bin/env bash
# Multi-tenant security on the real testbed (1 NVL72 rack, every m2g plugin):
# reserved tags and classes only for privileged accounts/groups, enforced by
# job_submit/m2g for a real unprivileged user; every override leaves an
# "m2g: audit:" line; a user cannot write AdminComment through m2g (neither
# through option values nor through Slurm) nor move a begin time m2g set,
# while an operator can, audited.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

T=$TB_TMP
USER_X=nobody  # a real account without privileges (uid 65534 on Debian)
cat >"$T/security.conf" <<'EOF'
SignalsFile=@DIR@/run/signals.json
SignalsPollSec=1
SignalsTTLSec=600
ReleaseCheckSec=2
PrivilegedGroups=root
PrivilegedTags=priority
PrivilegedClasses=benchmark
DeferExemptGroups=root
NoDeferAction=reject
EOF
tb_up --racks 1 --conf-extra "$T/security.conf"
FEED=$TB_DIR/run/signals.json
LOG=$TB_DIR/log/slurmctld.log
CTLD_PID=$(tb_ctld_pid)
chmod 755 "$T"
now=$(date +%s)
cat >"$FEED.tmp" <<EOF
{"schema": "m2g.signals/v1", "generated_at": $now, "source": "security.sh",
 "power": {"site": {"budget_kw": 2000, "draw_kw": 100}},
 "events": [{"id": "dr-sec", "start": $((now - 60)), "end": $((now + 3600)), "curtail_pct": 25}]}
EOF
mv -f "$FEED.tmp" "$FEED"
sleep 3
# as_user CMD...: run a Slurm client as the unprivileged user.
as_user() { runuser -u "$USER_X" -- env SLURM_CONF="$SLURM_CONF" "$@"; }
# audit TEXT: audit lines containing TEXT (fixed string); audit_re ERE: matching.
audit() { grep -cF "m2g: audit: $1" "$LOG" || true; }
audit_re() { grep -cE "m2g: audit: $1" "$LOG" || true; }
admin_comment() { squeue -h -t all -j "$1" -O admin_comment:600 | sed 's/ *$//'; }

# --- reserved tag and class: refused for the user, with the reason ---------------------------
rc=0
as_user sbatch -D /tmp -o /dev/null -N1 --gres=gpu:1 --m2g-tag=priority=high --wrap 'sleep 1' \
	>"$T/u1.out" 2>"$T/u1.err" || rc=$?
is "$rc" 1 "an unprivileged user's job with a reserved tag is refused"
ok "grep -q 'tag priority=high is reserved for privileged accounts (none) and Unix groups (root)' $T/u1.err" \
	"sbatch prints which tag is reserved and for whom"
is "$(audit "uid 65534 ($USER_X) account (default): refused: reject: tag priority=high reserved")" 1 \
	"the refusal leaves one audit line naming uid, user, account and tag"
rc=0
as_user sbatch -D /tmp -o /dev/null -N1 --gres=gpu:1 --m2g-class=benchmark --wrap 'sleep 1' \
	>/dev/null 2>"$T/u2.err" || rc=$?
ok "[[ $rc == 1 ]] && grep -q 'class benchmark is reserved' $T/u2.err" "a reserved class is refused as well"
uid_ok=$(as_user sbatch -D /tmp -o /dev/null --parsable -N1 --gres=gpu:1 --m2g-tag=team=llm --m2g-defer=ok \
	--wrap 'sleep 1' 2>"$T/u3.err") || true
ok "[[ -n '$uid_ok' ]]" "the same user's job without reserved intent is accepted"
[[ -n $uid_ok ]] || diag "$(cat "$T/u3.err")"

# --- the privileged group: allowed, audited -----------------------------------------------
pid=$(sbatch --parsable -o /dev/null -N1 --gres=gpu:1 --m2g-tag=priority=high --m2g-class=benchmark \
	--wrap 'sleep 1' 2>"$T/p.err") || true
ok "[[ -n '$pid' ]]" "a member of PrivilegedGroups (root) may use them"
is "$(audit "uid 0 (root) account root: class benchmark, tag priority=high (reserved) allowed for group root (PrivilegedGroups=)")" 1 \
	"and that leaves one audit line saying which key allowed it"
xid=$(sbatch --parsable -o /dev/null -N1 --gres=gpu:1 --m2g-class=training --m2g-defer=no --wrap 'sleep 1' \
	2>"$T/x.err") || true
ok "[[ -n '$xid' ]]" "--m2g-defer=no during a DR event from an exempt group is admitted"
is "$(audit "uid 0 (root) account root: --m2g-defer=no honoured during DR event dr-sec for exempt group root (DeferExemptGroups=)")" 1 \
	"and audited, naming the key that exempts it"
rc=0
as_user sbatch -D /tmp -o /dev/null -N1 --gres=gpu:1 --m2g-class=training --m2g-defer=no --wrap 'sleep 1' \
	>/dev/null 2>"$T/u4.err" || rc=$?
ok "[[ $rc == 1 ]] && grep -q 'may not use --m2g-defer=no during events' $T/u4.err" \
	"the unprivileged user may not refuse deferral during the event"

# --- AdminComment stays m2g's and Slurm's ------------------------------------------------------
rc=0
as_user sbatch -D /tmp -o /dev/null -N1 --gres=gpu:1 '--m2g-tag=x=a];m2g:[place=forged' --wrap 'sleep 1' \
	>/dev/null 2>"$T/u5.err" || rc=$?
ok "[[ $rc != 0 ]] && grep -q 'm2g-tag' $T/u5.err" "a tag value carrying AdminComment separators is refused by the option parser"
ok "! squeue -h -t all -O admin_comment:600 | grep -q forged" "and nothing of it reaches any AdminComment"
if [[ -n $uid_ok ]]; then
	for _ in $(seq 1 20); do [[ $(admin_comment "$uid_ok") == *admission=* ]] && break; sleep 0.5; done
	before=$(admin_comment "$uid_ok")
	ok "[[ '$before' == *'admission=defer'* ]]" "the user's deferrable job is deferred by the DR event ($before)"
	rc=0
	as_user scontrol update JobId="$uid_ok" AdminComment="m2g:[forged]" >/dev/null 2>&1 || rc=$?
	ok "[[ $rc != 0 ]]" "the user cannot rewrite its AdminComment"
	rc=0
	as_user scontrol update JobId="$uid_ok" StartTime=now >/dev/null 2>"$T/u6.err" || rc=$?
	ok "[[ $rc != 0 ]]" "nor move the begin time m2g set"
	is "$(admin_comment "$uid_ok")" "$before" "its AdminComment is unchanged"
	scontrol update JobId="$uid_ok" StartTime=now
	is "$(audit_re "JobId=$uid_ok: operator uid 0 \\(root\\) moved its begin time from [0-9]+ to [0-9]+, before m2g's \\(defer")" 1 \
		"an operator may, and that leaves an audit line"
fi
ok tb_ctld_unbroken "slurmctld neither crashed nor restarted throughout"
for j in $uid_ok $pid $xid; do scancel "$j" 2>/dev/null || true; done
done_testing
