#!/usr/bin/env bash
# hostlist-vs-scontrol.sh - compare m2g's hostlist library with Slurm's own
# `scontrol show hostnames EXPR` (expand) and `scontrol show hostlist NAMES`
# (compress), offline: no Slurm daemon, no network, no system slurm.conf.
#
# scontrol fatals without a configuration; the smallest one that lets
# `show hostnames/hostlist` run is a slurm.conf holding just ClusterName and
# SlurmctldHost. The script writes it into a temporary directory (removed on
# exit) and points SLURM_CONF at it.
#
# Cases: hand-written edge cases plus seeded pseudo-random expressions and
# name lists. Inputs without whitespace or quotes are sent to ONE
# interactive scontrol per mode (fast; needs coreutils' stdbuf so that
# stdout and stderr stay in order); the others, and those where Slurm is
# known to crash, get one scontrol call each. Slurm "errors" are: "Invalid
# hostlist", any "error:"/"fatal:" line, or a crash.
# Cases marked "deviation" are inputs where Slurm silently yields wrong names,
# crashes or would expand without limit; m2g must reject them (ERROR).
#
# Environment:
#   HOSTLIST_TOOL    the built test/tools/hostlist-tool. Default:
#                    <directory of this script>/../tools/hostlist-tool, which
#                    is test/tools/hostlist-tool of the build tree when the
#                    script runs from the build tree; set it for VPATH builds.
#   SCONTROL         scontrol to compare with (default: scontrol in PATH)
#   HOSTLIST_SEED    seed of the pseudo-random cases (default 20240611)
#   HOSTLIST_RANDOM  random cases per mode (default 150)
#
# Output: TAP ("1..N", "ok K - ..." / "not ok K - ..." with "# " details).
# Exit status: 0 if every case agrees, 1 otherwise.

set -u

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOOL=${HOSTLIST_TOOL:-$script_dir/../tools/hostlist-tool}
SCONTROL=${SCONTROL:-scontrol}
SEED=${HOSTLIST_SEED:-20240611}
NRANDOM=${HOSTLIST_RANDOM:-150}

if ! command -v "$SCONTROL" >/dev/null 2>&1; then
    echo "1..0 # SKIP scontrol not found"
    exit 0
fi
if [ ! -x "$TOOL" ]; then
    echo "Bail out! hostlist-tool not found at $TOOL (set HOSTLIST_TOOL)"
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hostlist-vs-scontrol.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM HUP

# Keep the caller's Slurm environment (SLURM_CLUSTERS, ...) out of scontrol.
while read -r v; do unset "$v"; done < <(compgen -e | grep '^SLURM_')
printf 'ClusterName=m2g-hostlist-test\nSlurmctldHost=localhost\n' > "$tmp/slurm.conf"
export SLURM_CONF=$tmp/slurm.conf
timeout_cmd=()
command -v timeout >/dev/null 2>&1 && timeout_cmd=(timeout 60)
probe=$("${timeout_cmd[@]}" "$SCONTROL" show hostnames 'n[1-2]' 2>&1)
if [ "$probe" != $'n1\nn2' ]; then
    echo "Bail out! scontrol does not run with the minimal slurm.conf: ${probe//$'\n'/ }"
    exit 1
fi

# ---------------------------------------------------------------- cases
C_MODE=() C_IN=() C_DESC=() C_DEV=()
# add MODE(e|c) INPUT DESCRIPTION [dev|dev-noslurm]
add() { C_MODE+=("$1"); C_IN+=("$2"); C_DESC+=("$3"); C_DEV+=("${4:-}"); }
e() { add e "$1" "expand ${2:-$1}" "${3:-}"; }
c() { add c "$1" "compress ${2:-$1}" "${3:-}"; }

# Forms, widths, multiple groups
e 'n1'; e 'n[1-3]'; e 'r[01-02]n[01-03]'; e 'r[01-02]n[01-18],login1'
e 'login'; e 'n[1,3,5-7]'; e 'n[08-11]'; e 'n[8-11]'; e 'n[008-011]'
e 'n[9-10]'; e 'n[000001-3]'; e 'n[1,01,001]'; e 'n[010-9]'
e 'a[1-2]b[1-2]c[1-2]'; e 'r[1-2]-n[1-3]'; e 'x[1,2]y[3]'
e 'rack[1-2]_node[01-02]'; e 'a[1]b[2]c[3]d[4]'; e 'n[1-2].ib'
e 'gpu[1-2]-[3-4]'; e '[1-3]'; e '[1-3],[4-5]'; e '[01-02]x[1]'
e 'a[1-2]b[3]c[4-5],d[6]'; e 'r[1-3]n[1-2]p[1-2]s[1]'
# Suffixes after the last bracket, stray brackets, nesting
e 'n[1-3]x'; e 'n[1-3]-ib'; e 'n[1-2]b'; e 'n[1-2]]'; e 'a[1]]b[2]'
e 'n1]'; e 'a]1'; e 'a]b[1-2]'; e 'a[1[2]]'; e 'n[1-2]n'
# Separators and empty items
e 'a,b,c'; e 'n[1-2],n[3-4]'; e 'n[1-2],,n3'; e ',n1,'; e ',,,'
e 'n1 n2'; e $'n1\tn2' 'n1<TAB>n2'; e '  a,,b  '; e 'n[1, 3]'
e 'n[1-2] n[5-6],n7'; e ''  '(empty)'; e ' ' '(one space)'
# Bad elements
e 'n[]'; e 'n[,]'; e 'n[1,,2]'; e 'n[1,]'; e 'n[,1]'; e 'n[3-1]'
e 'n[10-9]'; e 'n[1a-3]'; e 'n[1-]'; e 'n[+1-2]'; e 'n[1-+3]'
e 'n[1--3]'; e 'n[-1]'; e 'n[0x1]'; e 'n[1x]'; e 'n[1-3a]'; e 'n[a]'
e 'n[1-2-3]'; e 'n[ 1-2]'; e 'n[1 -2]'; e 'n[0- -0]'; e 'n[1- 3]'
e 'n[1-2 ]'; e 'n[ +1]'; e 'n[+-1]'; e 'n[1-+ 3]'; e 'a[x]b[1-2]c[1-3]'
e 'a[1-2]b[x]c[1-3]'; e 'a[1-2]b[]'; e 'n[1-2],m[2-1]'
# Duplicates, plain names, widths
e 'n1,n1'; e 'n[1-3],n[2-4]'; e 'n[1,1]'; e 'node1,node2'; e '1,2,3'
e '007'; e 'n1,n01'; e 'n09,n10'; e 'a.b1,a.b2'; e 'n-1,n-2'
# Limits
e 'n[0-65535]' 'n[0-65535] (65536 hosts)'; e 'n[0-65536]'; e 'n[1-65536]'
e 'n[70000-135535]'; e 'a[0-65535,0]b[1]'; e 'a[0-65536]b[1]'
e 'a[0-65535,0]b[1]c[1]' '' dev
e 'a[0-65535]b[0-16]' 'a[0-65535]b[0-16] (1114112 hosts)' dev-noslurm
# Large numbers
e 'n[4294967295-4294967297]'; e 'n18446744073709551614'
e 'n[18446744073709551600-18446744073709551614]'
e 'n18446744073709551615' '' dev; e 'n99999999999999999999999' '' dev
e 'n[18446744073709551614-18446744073709551615]' '' dev
e 'n[0-99999999999999999999999]' '' dev; e 'n[99999999999999999999999]' '' dev
e 'n000000000000000000000000000001'
# Unclosed '[' (Slurm invents names such as "r]")
e 'r[01-' '' dev; e 'bad[12' '' dev; e '[12' '' dev; e 'a[b[1-2]' '' dev
e 'a,[,b' '' dev; e '[' '' dev; e 'a[[1]' '' dev; e 'n1,n[2' '' dev

# Compression: order, duplicates, widths
c 'n1,n2,n3'; c 'n3,n1,n2'; c 'n1,n1'; c 'n1,n2,n1'; c 'n2,n1'
c 'n10,n9,n8'; c 'n1,n01'; c 'n01,n1'; c 'n9,n10'; c 'n09,n10'
c 'n9,n010'; c 'n08,n9,n10'; c 'n8,n9,n10,n11'; c 'n010,n9'
c 'n99,n100,n101'; c 'n099,n100'; c 'n99,n0100'; c 'n0,n1'
c '0,00,000'; c '0,1'; c '1,2,3'; c '01,2'; c 'a,a'; c 'a,b,a1,a2,b1'
c 'a1b,a2b'; c 'a1,b1,a2'; c 'n1,m1,n2'; c 'a1,a1,a2'; c 'a2,a1,a1'
c 'node1,node2'; c 'n1,n3,n5'; c 'n1,n2,n4,n5'
c 'r01n01,r01n02,r02n01'; c 'login1'; c 'login'; c 'x'; c 'n1,,n2'
c 'gpu-a1,gpu-a2,gpu-b1'; c 'n-1,n-2'; c 'n1.ib,n2.ib'
c 'n18446744073709551613,n18446744073709551614'; c 'n1 n2'
# Other whitespace is part of names, and ignored when prefixes are compared
c $'a\r1,a2' 'a<CR>1,a2'; c $'a\v1,a2' 'a<VT>1,a2'; c $'a1,b\f2' 'a1,b<FF>2'
c $'n 1\v,n2' 'n 1<VT>,n2'; e $'a\r[1-2]' 'a<CR>[1-2]'; c '-n1,-n2'
# Expressions given to show hostlist
c 'n[1-2]b[1-2]'; c 'n[1-2],n[3-4]'; c 'n[1-3],n[2-5]'; c 'n[01-02],n[3-4]'
c 'n[ 1-2],n3'; c 'n[ 1-2],n03'; c 'n[+1-2]'; c '[1-3],[4-5]'
c 'x[1-2],[3]'; c 'n[1-3]x'; c 'n[3-1]'; c 'n1]'; c 'r[1-2]n[1-2],r3n1'
c 'n18446744073709551615,n0' '' dev; c 'r[01-' '' dev
c 'a[0-65535]b[0-16]' 'a[0-65535]b[0-16] (1114112 hosts)' dev

# Larger lists (built with awk; names separated by ',')
big_sorted=$(awk 'BEGIN{for(i=1;i<=5000;i++) printf "%scn%04d", (i>1?",":""), i}')
c "$big_sorted" 'cn0001..cn5000 sorted'
big_shuffled=$(awk -v s="$SEED" 'BEGIN{srand(s); n=2000; for(i=1;i<=n;i++) a[i]=i;
    for(i=n;i>1;i--){j=int(rand()*i)+1; t=a[i]; a[i]=a[j]; a[j]=t}
    for(i=1;i<=n;i++) printf "%sr%dn%d", (i>1?",":""), int(a[i]/100), a[i]%100}')
c "$big_shuffled" '2000 shuffled r<k>n<j> names'
big_mixed=$(awk 'BEGIN{for(i=1;i<=3000;i++) printf "%sn%0" (i%3+1) "d", (i>1?",":""), int(i/2)}')
c "$big_mixed" '3000 names with mixed widths and duplicates'
e 'r[1-40]n[1-50]p[1-2]' 'r[1-40]n[1-50]p[1-2] (4000 hosts)'

# ---------------------------------------------------------------- random
rng=$SEED
rnd() { rng=$(( (rng * 1103515245 + 12345) % 2147483648 )); R=$(( (rng >> 8) % $1 )); }
PREFIXES=(n node r1n gpu- c x1y rack2-n login a.b cn_ '' n0 q ab12c)
JOINS=('' n - s _ p1p)

num() { # num VALUE -> NUM, with a random zero padding width
    rnd 5
    case $R in
        0|1) NUM=$1 ;;
        2) printf -v NUM '%02d' "$1" ;;
        3) printf -v NUM '%03d' "$1" ;;
        4) printf -v NUM '%05d' "$1" ;;
    esac
}
element() { # -> EL: number or lo-hi, rarely malformed
    local lo hi
    rnd 1000
    if [ $R -lt 8 ]; then EL=''; return; fi
    if [ $R -lt 16 ]; then rnd 9; EL="$((R + 5))-$((R + 1))"; return; fi
    if [ $R -lt 20 ]; then EL='1a'; return; fi
    rnd 130; lo=$R
    num "$lo"; EL=$NUM
    rnd 3
    if [ $R -gt 0 ]; then rnd 16; hi=$((lo + R)); num "$hi"; EL="$EL-$NUM"; fi
}
group() { # -> GROUP: [el,el,...]
    local n i g=''
    rnd 3; n=$((R + 1))
    for ((i = 0; i < n; i++)); do element; ((i > 0)) && g+=,; g+=$EL; done
    GROUP="[$g]"
}
random_expr() { # -> EXPR
    local items n i k ng g item
    rnd 4; n=$((R + 1)); items=''
    for ((i = 0; i < n; i++)); do
        rnd ${#PREFIXES[@]}; item=${PREFIXES[R]}
        rnd 10
        if [ $R -lt 3 ]; then
            rnd 3
            if [ $R -gt 0 ]; then rnd 200; num "$R"; item+=$NUM; fi
        else
            rnd 3; ng=$((R + 1))
            for ((k = 0; k < ng; k++)); do
                if [ $k -gt 0 ]; then rnd ${#JOINS[@]}; item+=${JOINS[R]}; fi
                group; item+=$GROUP
            done
            rnd 100; [ $R -eq 0 ] && item+='x'
        fi
        ((i > 0)) && items+=,
        items+=$item
    done
    EXPR=$items
}
random_names() { # -> NAMES: comma-separated names with runs, shuffles, duplicates
    local segs s p start len w i j t names=()
    rnd 4; segs=$((R + 1))
    for ((s = 0; s < segs; s++)); do
        rnd ${#PREFIXES[@]}; p=${PREFIXES[R]}
        rnd 120; start=$R; rnd 12; len=$((R + 1)); rnd 5; w=$R
        for ((i = start; i < start + len; i++)); do
            if [ "$w" -eq 4 ]; then rnd 3; printf -v t "%s%0$((R + 1))d" "$p" "$i"
            elif [ "$w" -eq 3 ] && [ -n "$p" ]; then rnd 4; t="$p"; [ $R -eq 0 ] && t="${p}$i"
            else printf -v t "%s%0$((w > 0 ? w : 1))d" "$p" "$i"; fi
            names+=("$t")
        done
    done
    rnd 10
    if [ $R -lt 3 ]; then # shuffle
        for ((i = ${#names[@]} - 1; i > 0; i--)); do
            rnd $((i + 1)); j=$R; t=${names[i]}; names[i]=${names[j]}; names[j]=$t
        done
    elif [ $R -lt 5 ]; then # reverse
        local rev=()
        for ((i = ${#names[@]} - 1; i >= 0; i--)); do rev+=("${names[i]}"); done
        names=("${rev[@]}")
    fi
    rnd 4
    if [ $R -eq 0 ]; then # duplicates
        rnd ${#names[@]}; i=$R; rnd $((${#names[@]} + 1)); names=("${names[@]:0:R}" "${names[i]}" "${names[@]:R}")
    fi
    NAMES=$(IFS=,; echo "${names[*]}")
}

for ((r = 1; r <= NRANDOM; r++)); do
    random_expr; add e "$EXPR" "random expand $r: $EXPR"
done
for ((r = 1; r <= NRANDOM; r++)); do
    rnd 4
    if [ $R -eq 0 ]; then random_expr; NAMES=$EXPR; else random_names; fi
    add c "$NAMES" "random compress $r: $NAMES"
done

N=${#C_IN[@]}

# ---------------------------------------------------------------- scontrol
declare -A SL SLNOTE
# One scontrol call; prints its result (names space-separated for expand).
scontrol_one() { # MODE INPUT -> RESULT, NOTE
    local what=hostnames rc
    [ "$1" = c ] && what=hostlist
    # The status travels through stdout so that bash's "Segmentation fault"
    # report for a crashing scontrol goes to /dev/null, not into the TAP.
    rc=$( { "${timeout_cmd[@]}" "$SCONTROL" -- show "$what" "$2" >"$tmp/out" 2>"$tmp/err"
            echo $?; } 2>/dev/null )
    if [ "$rc" -ne 0 ] || grep -qE 'error:|fatal:|Invalid hostlist' "$tmp/err"; then
        if [ "$rc" -gt 128 ]; then NOTE="(scontrol crashed, status $rc)"
        else NOTE="($(head -c 300 "$tmp/err" | tr '\n' ' '))"; fi
        RESULT=ERROR
        return
    fi
    RESULT=$(tr '\n' ' ' < "$tmp/out")
    RESULT=${RESULT% }
    NOTE="($(wc -l < "$tmp/out") lines)"
}

batchable() { # INPUT MODE: printable, no blanks/quotes, no file path
    local s=$1
    [ -n "$s" ] || return 1
    [[ $s == *[![:graph:]]* || $s == *[\"\']* ]] && return 1
    [ "$2" = c ] && [[ $s == /* ]] && return 1
    return 0
}

run_batch() { # MODE: sends all batchable cases of MODE to one scontrol
    local mode=$1 what=hostnames k
    command -v stdbuf >/dev/null 2>&1 || return 0  # then every case runs alone
    [ "$mode" = c ] && what=hostlist
    : > "$tmp/cmds"
    for ((k = 0; k < N; k++)); do
        if [ "${C_MODE[k]}" != "$mode" ] || [ -n "${C_DEV[k]}" ]; then continue; fi
        batchable "${C_IN[k]}" "$mode" || continue
        printf 'show hostnames @@m2g@%d@@\nshow %s %s\n' "$k" "$what" "${C_IN[k]}" >> "$tmp/cmds"
    done
    "${timeout_cmd[@]}" stdbuf -o0 -e0 "$SCONTROL" < "$tmp/cmds" > "$tmp/batch.out" 2>&1
    # Streamed (string accumulation in awk is quadratic for 65536 names):
    # batch.res gets "<case> name name..." per case, batch.err "<case> <flag>".
    awk -v errs="$tmp/batch.err" '
        index($0, "@@m2g@") == 1 {
            if (cur != "") printf "\n"
            cur = substr($0, 7); sub(/@@$/, "", cur); err[cur] = 0
            printf "%s", cur; next
        }
        /^scontrol: (error|fatal):/ || /^Invalid hostlist:/ { err[cur] = 1; next }
        /^scontrol:( |$)/ { next }
        cur != "" { printf " %s", $0 }
        END { if (cur != "") printf "\n"; for (k in err) print k, err[k] > errs }
    ' "$tmp/batch.out" > "$tmp/batch.res"
    local names flag
    declare -A failed_case=()
    [ -f "$tmp/batch.err" ] && while read -r k flag; do failed_case[$k]=$flag; done < "$tmp/batch.err"
    while read -r k names; do
        [ "${failed_case[$k]-}" = 1 ] && SL[$k]=ERROR || SL[$k]=$names
    done < "$tmp/batch.res"
    rm -f "$tmp/batch.err"
}

run_batch e
run_batch c
for ((k = 0; k < N; k++)); do
    [ -n "${SL[$k]+set}" ] && continue
    if [ "${C_DEV[k]}" = dev-noslurm ]; then
        SL[$k]='(not run: it would print over a million names)'; SLNOTE[$k]=''
        continue
    fi
    scontrol_one "${C_MODE[k]}" "${C_IN[k]}"
    SL[$k]=$RESULT; SLNOTE[$k]=$NOTE
done

# ---------------------------------------------------------------- m2g
declare -A M2G
for mode in e c; do
    : > "$tmp/in.$mode"; idx=()
    for ((k = 0; k < N; k++)); do
        [ "${C_MODE[k]}" = "$mode" ] || continue
        printf '%s\n' "${C_IN[k]}" >> "$tmp/in.$mode"; idx+=("$k")
    done
    if [ "$mode" = e ]; then sub='expand'; else sub='compress'; fi
    "$TOOL" "$sub" < "$tmp/in.$mode" > "$tmp/out.$mode" 2>"$tmp/err.$mode"
    i=0
    while IFS= read -r line; do
        M2G[${idx[i]}]=$line; i=$((i + 1))
    done < "$tmp/out.$mode"
done

# ---------------------------------------------------------------- report
# clip TEXT -> CL (shortened); desc K -> D (TAP-safe description)
clip() { CL=${1//[[:cntrl:]]/?}; [ ${#CL} -gt 400 ] && CL="${CL:0:400}... (${#1} chars)"; }
desc() {
    D=${C_DESC[$1]}; [ ${#D} -gt 120 ] && D="${D:0:120}..."
    D=${D//$'\t'/<TAB>}; D=${D//[[:cntrl:]]/?}; D=${D//\#/\\#}
}

echo "1..$N"
failed=0
for ((k = 0; k < N; k++)); do
    t=$((k + 1)); mine=${M2G[$k]-"(no output)"}; theirs=${SL[$k]}
    desc "$k"
    if [ -n "${C_DEV[k]}" ]; then
        if [ "$mine" = ERROR ]; then
            echo "ok $t - $D (deviation: m2g rejects it)"
            clip "$theirs"; echo "# slurm:  $CL ${SLNOTE[$k]-}"
            continue
        fi
        D="$D (deviation: m2g must reject it)"
    elif [ "$mine" = "$theirs" ]; then
        echo "ok $t - $D"
        continue
    fi
    failed=$((failed + 1))
    echo "not ok $t - $D"
    clip "${C_IN[k]}"; echo "# input:  $CL"
    clip "$theirs"; echo "# slurm:  $CL ${SLNOTE[$k]-}"
    clip "$mine"; echo "# m2g:    $CL"
done
echo "# $((N - failed))/$N cases agree (seed $SEED)"
[ $failed -eq 0 ] && exit 0 || exit 1
