#!/usr/bin/env bash
# spank_m2g on the real testbed: --m2g-* options through real sbatch and
# srun, what tasks see, exact rejections, and the dcgm-exporter/textfile
# files that live exactly as long as the job on each node.
# shellcheck source=test/integration/lib.sh
. "$(dirname "$0")/lib.sh"

T=$TB_TMP
tb_up --racks 2
RECIPES=$TB_DIR/etc/m2g-recipes.conf
DCGM=$TB_DIR/run/dcgm
TEXTFILE=$TB_DIR/run/textfile
cd "$T"

# --- two plugins: only the job mapping has a job prolog/epilog ----------------
# With any SPANK plugin that defines them, slurmd runs a SPANK job script on
# every node of every job and cannot answer a job's end at once (26.05:
# prep_script_slurmd.c spank_has_prolog()/spank_has_epilog(), req.c
# _rpc_terminate_job): spank_m2g.so must not, spank_m2g_jobmap.so must.
so_of() { sed -n "s|^required \([^ ]*/$1\.so\) .*|\1|p" "$TB_DIR/etc/plugstack.conf"; }
hooks() { nm -D --defined-only "$1" | awk '$3 ~ /^slurm_spank_job_(prolog|epilog)$/ {print $3}' | sort | paste -sd,; }
opts_so=$(so_of spank_m2g)
map_so=$(so_of spank_m2g_jobmap)
is "$([[ -e $opts_so ]] && hooks "$opts_so" || echo "no spank_m2g.so in plugstack.conf")" "" "plugstack.conf's spank_m2g.so defines no job prolog or epilog"
is "$([[ -e $map_so ]] && hooks "$map_so" || echo "no spank_m2g_jobmap.so in plugstack.conf")" "slurm_spank_job_epilog,slurm_spank_job_prolog" \
	"plugstack.conf's spank_m2g_jobmap.so defines the job prolog and epilog"

# --- help ------------------------------------------------------------------
for cmd in sbatch srun salloc; do
	help=$($cmd --help 2>&1)
	n=0
	for o in topology segment class recipe defer tag explain; do
		grep -Eq -- "--m2g-$o[= ].*\[m2g\]|--m2g-$o[= ]?[^ ]*\$" <<<"$help" && n=$((n + 1))
	done
	is "$n:$(grep -c '\[m2g\]' <<<"$help")" "7:7" "$cmd --help lists the 7 --m2g-* options with [m2g] help"
done

# --- every bad option: one exact line, nonzero exit, nothing submitted -------
before=$(sbatch --parsable -J marker --wrap true)
bad() {  # EXPECTED-MESSAGE ARGS...
	local want=$1 rc=0 err
	shift
	err=$(sbatch --parsable -J bad "$@" --wrap true 2>&1 >/dev/null) || rc=$?
	is "$((rc != 0)):$(head -n1 <<<"$err")" "1:sbatch: error: m2g: $want" "rejected: $*"
}
bad "--m2g-topology=tight: expected strict, prefer or any, optionally followed by :nvlink, leaf or spine (e.g. strict:nvlink)" --m2g-topology=tight
bad "--m2g-segment=0: expected a whole number of nodes from 1 to 4096" --m2g-segment=0
bad "--m2g-class=trainin: unknown class; expected training, finetune, inference, batch, benchmark, dataproc or agentic" --m2g-class=trainin
bad "--m2g-defer=later: expected ok, no or until=TIME (YYYY-MM-DDTHH:MM[:SS] or now+N[s|m|h|d])" --m2g-defer=later
bad "--m2g-tag=tenant: expected KEY=VALUE, e.g. tenant=acme" --m2g-tag=tenant
bad "--m2g-tag=x=\$(id): tag value '\$(id)' is not valid; use 1-128 characters of A-Z, a-z, 0-9, '_', '.', '-', ':', '/', '@', '+'" '--m2g-tag=x=$(id)'
bad "--m2g-recipe=Bad/Name: a recipe name is 1-64 characters of a-z, 0-9, '_', '.', '-' (see m2g recipe list)" --m2g-recipe=Bad/Name
bad "options: --m2g-recipe=llama3-8b: no such recipe in $RECIPES; known: llama3-70b-finetune, llama3-405b-pretrain, vllm-llama3-70b-serve, gpu-benchmark, embed-8b-batch" --m2g-recipe=llama3-8b
rc=0
err=$(M2G_CLASS=wizard sbatch --parsable -J bad --wrap true 2>&1 >/dev/null) || rc=$?
is "$((rc != 0)):$(head -n1 <<<"$err")" \
	"1:sbatch: error: m2g: options: environment M2G_CLASS=wizard: --m2g-class=wizard: unknown class; expected training, finetune, inference, batch, benchmark, dataproc or agentic" \
	"rejected: a bad M2G_CLASS in the environment"
rc=0
err=$(srun -N1 --m2g-segment=x true 2>&1) || rc=$?
ok "[[ $rc != 0 && \$(head -n1 <<<'$err') == 'srun: error: m2g: --m2g-segment=x: expected a whole number of nodes from 1 to 4096' ]]" \
	"srun rejects a bad option the same way"
after=$(sbatch --parsable -J marker --wrap true)
is "$after" "$((before + 1))" "no rejected submission created a job"

# --- a job with every option ----------------------------------------------
# The class given on the command line wins over the recipe's (finetune);
# the recipe fills model, GPUs and power; OTEL attributes are extended.
rc=0
job=$(OTEL_RESOURCE_ATTRIBUTES=service.name=trainer sbatch --parsable --account=acme -N2 --exclusive --gres=gpu:4 \
	--m2g-topology=strict:nvlink --m2g-segment=2 --m2g-class=training --m2g-recipe=llama3-70b-finetune \
	--m2g-defer=until=now+2h --m2g-tag=tenant=acme --m2g-tag=project=p1 --m2g-explain \
	-o "$T/job.out" --wrap 'env | grep -E "^(M2G_|OTEL_)" | sort; srun -l env | grep -E "(M2G_|OTEL_)" | sort; sleep 15' \
	2>"$T/sbatch.err") || rc=$?
is "$rc" 0 "sbatch with every --m2g-* option"
ok "grep -Eq '^sbatch: m2g: job intent: topology=strict:nvlink segment=2 class=training recipe=llama3-70b-finetune defer=until=[0-9]+ tags=tenant=acme,project=p1 explain=1 model=llama-3.1-70b gpus=16 power_w_per_gpu=950 runtime_s=43200 gpu_multiple=8$' '$T/sbatch.err'" \
	"--m2g-explain prints the resolved intent on the submitting terminal"
wait_job_state "$job" RUNNING 60
nodes=$(job_nodes "$job" | tr '\n' ' ')
sleep 2
files=0 content_ok=0
for n in $nodes; do
	for g in 0 1 2 3; do
		[[ -f $DCGM/$n/$g ]] && files=$((files + 1))
		[[ $(cat "$DCGM/$n/$g" 2>/dev/null) == "$job" ]] && content_ok=$((content_ok + 1))
	done
done
is "$files:$content_ok" "8:8" "while it runs: a dcgm-exporter mapping file per GPU on both nodes, holding the job id"
n1=${nodes%% *}
ok "grep -qx 'm2g_job_info{job_id=\"$job\",node=\"$n1\",class=\"training\",recipe=\"llama3-70b-finetune\",tenant=\"acme\",project=\"p1\",model=\"llama-3.1-70b\"} 1' '$TEXTFILE/$n1/m2g_job_$job.prom'" \
	"while it runs: the node_exporter textfile has m2g_job_info with class and tags"
wait_job_state "$job" COMPLETED 90
out=$(cat "$T/job.out")
for want in M2G_CLASS=training M2G_TOPOLOGY=strict:nvlink M2G_SEGMENT=2 M2G_RECIPE=llama3-70b-finetune \
	M2G_TAGS=tenant=acme,project=p1 M2G_JOB_ID=$job M2G_MODEL=llama-3.1-70b M2G_GPUS=16; do
	ok "grep -qx '$want' <<<'$out'" "batch script sees $want"
done
is "$(grep -c "^[01]: M2G_TAGS=tenant=acme,project=p1\$" <<<"$out")" 2 "tasks of srun on both nodes see the tags"
is "$(grep '^OTEL_RESOURCE_ATTRIBUTES=' <<<"$out")" \
	"OTEL_RESOURCE_ATTRIBUTES=service.name=trainer,slurm.job.id=$job,m2g.class=training,m2g.tenant=acme,m2g.model=llama-3.1-70b" \
	"OTEL_RESOURCE_ATTRIBUTES is extended, not replaced"
is "$(grep -c "^[01]: OTEL_RESOURCE_ATTRIBUTES=service.name=trainer,slurm.job.id=$job,m2g" <<<"$out")" 2 \
	"every task's OTEL_RESOURCE_ATTRIBUTES carries the job's attributes"
ok "! grep -q '^M2G_EXPLAIN' <<<'$out'" "--m2g-explain does not leak into the job"
sleep 2
left=$(find "$DCGM" "$TEXTFILE" -type f | wc -l)
is "$left" 0 "after it ends: mapping files and textfile are gone"

# --- a recipe sizes the job that gives no size of its own --------------------
# job_submit/m2g fills nodes, GPUs per node and the time limit from the
# recipe (16 GPUs on 4-GPU nodes; its 12 h runtime cut to the partition's
# MaxTime of 4 h, since EnforcePartLimits=ALL refuses a longer limit).
rc=0
sized=$(sbatch --parsable --hold --m2g-recipe=llama3-70b-finetune --wrap true 2>"$T/sized.err") || rc=$?
is "$rc" 0 "sbatch --m2g-recipe with no -N, --gres or -t is accepted"
show=$(scontrol show job "$sized")
ok "grep -Eq 'NumNodes=4(-4)? ' <<<'$show' && grep -Eq 'TresPerNode=gres[:/]gpu:4' <<<'$show' && grep -q 'TimeLimit=04:00:00' <<<'$show'" \
	"it is sized from the recipe: 4 nodes x 4 GPUs, the partition's 4 h limit"
grep -E 'NumNodes=|TresPerNode=|TimeLimit=' <<<"$show" | sed 's/^/# /'
ok "grep -qF \"m2g: sized from --m2g-recipe=llama3-70b-finetune: -t 04:00:00 (the partition's MaxTime; the recipe's runtime is 12:00:00) -N 4 --gres=gpu:4\" '$T/sized.err'" \
	"sbatch says what the recipe set"
scancel "$sized"
# An explicit size wins: -N 6 --gres=gpu:4 -t 10 is 24 GPUs, three 8-GPU replicas.
own=$(sbatch --parsable --hold -N6 --gres=gpu:4 -t 10 --m2g-recipe=llama3-70b-finetune --wrap true 2>/dev/null) || own=
show=$(scontrol show job "$own" 2>&1)
ok "[[ -n '$own' ]] && grep -Eq 'NumNodes=6(-6)? ' <<<'$show' && grep -q 'TimeLimit=00:10:00' <<<'$show'" \
	"an explicit -N, --gres and -t win over the recipe"
[[ -n $own ]] && scancel "$own"
# ... unless it breaks the recipe's own parallelism, refused with why.
before=$(sbatch --parsable -J marker --wrap true)
rc=0
sbatch -N1 --gres=gpu:4 --m2g-recipe=llama3-70b-finetune --wrap true 2>"$T/refused.err" >/dev/null || rc=$?
ok "(( rc != 0 )) && grep -qF 'm2g: --m2g-recipe=llama3-70b-finetune runs on 16 GPUs in model replicas of 8 GPUs (TP*PP); this job asks for 4 (-N 1 x 4 per node), not a whole number of them' '$T/refused.err'" \
	"fewer GPUs than one model replica is refused, saying what is accepted"
diag "$(cat "$T/refused.err")"
rc=0
sbatch -N2 --m2g-recipe=llama3-70b-finetune --wrap true 2>"$T/refused2.err" >/dev/null || rc=$?
ok "(( rc != 0 )) && grep -q -- '-N 2 cannot hold them evenly at most 4 per node' '$T/refused2.err'" \
	"-N too small for the recipe's GPUs is refused"
after=$(sbatch --parsable -J marker --wrap true)
is "$after" "$((before + 1))" "no refused submission created a job"

# --- scancel removes them too -----------------------------------------------
job2=$(sbatch --parsable -N1 --exclusive --gres=gpu:4 --m2g-class=inference --wrap 'sleep 300')
wait_job_state "$job2" RUNNING 60
n2=$(job_nodelist "$job2")
sleep 2
is "$(cat "$DCGM/$n2/0" 2>/dev/null)" "$job2" "a running job's mapping file exists"
scancel "$job2"
wait_job_state "$job2" CANCELLED 60
gone=no
for _ in $(seq 1 40); do
	[[ -z $(find "$DCGM" "$TEXTFILE" -type f) ]] && { gone=yes; break; }
	sleep 0.5
done
is "$gone" yes "after scancel: its mapping files and textfile are gone"

# --- environment defaults and srun as the submitter -------------------------
out=$(M2G_CLASS=inference M2G_TAGS=tenant=globex srun --account=globex -N1 --m2g-tag=project=p2 env | grep -E '^M2G_(CLASS|TAGS)=' | sort)
is "$out" "M2G_CLASS=inference
M2G_TAGS=project=p2,tenant=globex" "srun: M2G_* environment defaults apply under the command line, tags add up"

# --- the tenant is the job's Slurm account ------------------------------------
# job_submit/m2g binds it: a job naming none gets its account, in what the
# tasks see and in the prolog's telemetry labels; a job naming another is
# refused (PrivilegedTags=tenant would let privileged accounts do it).
rc=0
err=$(sbatch --parsable --account=acme -N1 --gres=gpu:1 --m2g-tag=tenant=globex --wrap true 2>&1 >/dev/null) || rc=$?
is "$((rc != 0)):$(head -n1 <<<"$err")" "1:sbatch: error: m2g: --m2g-tag=tenant=globex: a job's tenant is its Slurm account (acme); naming another is reserved for privileged accounts (none) and Unix groups (none) with PrivilegedTags=tenant in m2g.conf. Submit without the tag, or with --account=globex if you may charge that account." \
	"a job naming another tenant than its account is refused, with what is accepted"
ok "grep -q 'm2g: audit: uid 0 (root) account acme: refused: tag tenant=globex is not its account' '$TB_DIR/log/slurmctld.log'" \
	"the refusal is audited"
job=$(sbatch --parsable --account=acme -N1 --gres=gpu:1 --m2g-class=training --m2g-tag=project=p3 \
	-o "$T/tenant.out" --wrap 'env | grep -E "^(M2G_TAGS|OTEL_RESOURCE_ATTRIBUTES)=" | sort; sleep 6')
wait_job_state "$job" RUNNING 60
sleep 1
n1=$(job_nodes "$job" | head -n1)
ok "grep -q 'tenant=\"acme\",project=\"p3\"' '$TEXTFILE/$n1/m2g_job_$job.prom'" \
	"no tenant given: the prolog's m2g_job_info carries tenant=\"acme\", the job's account"
wait_job_state "$job" COMPLETED 60
is "$(grep '^M2G_TAGS=' "$T/tenant.out")" "M2G_TAGS=project=p3,tenant=acme" "... and the job sees M2G_TAGS with its account as tenant"
ok "grep -q '^OTEL_RESOURCE_ATTRIBUTES=.*m2g.tenant=acme' '$T/tenant.out'" "... and its OTEL attributes too"

done_testing
