#!/usr/bin/env bash
# The GPU check (benchmarks/gpu/README.md), run on the lent machine in the checkout once every part has arrived:
#
#   bash benchmarks/gpu/run.sh KIT          KIT: the folder benchmarks/gpu/prepare.py wrote (.gpu)
#   bash benchmarks/gpu/run.sh KIT --dry    print the steps, their caps and the budget; run nothing
#   BELUGA_GPU_PROFILE=packs bash benchmarks/gpu/run.sh KIT      a named profile's steps (PROFILES below)
#
# Without BELUGA_GPU_PROFILE (or with "next") it runs the first profile of RANKED that benchmarks/gpu/recorded.txt
# does not list: GPU time is rare, so each lent machine records the next piece of evidence.
#
# It installs the carried wheels into one folder (--no-index), puts the MiniLM's weights together and checks their
# sha256, then runs each step with a cap, never past the 9-minute budget. Whatever fails, it goes on and says so.
# $OUT (the device tool's return folder, which takes back at most 8 files) or ./gpu-out receives summary.txt and
# logs.tar.gz: one log per step, the image's pip freeze, nvidia-smi dmon's samples, the quick run's report.
set -u

KIT=${1:-.gpu}
DRY=$([[ ${2:-} == --dry ]] && echo 1 || echo 0)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUDGET=${BELUGA_GPU_BUDGET:-540}
# Each profile is one session's check within the budget: "check", the default, the GPU tests, the quick run, the
# folds' speed and the suite; "packs", many trainings per GPU (issue 40): the quick run with workers = 2 (as
# quick.toml sets) against workers = "auto", the workers and pack = "auto" that quick-lora.toml's dry run chooses
# (the pack probe on the GPU), and full fine-tuning, LoRA and LoRA packs on the GPU (bench_pack).
# "ray" (issue 60), Ray's long-lived workers at 1, 2, 4 and 8 slots on the one GPU against the multi executor at
# workers = "auto" (bench_ray_slots; Ray's wheel is carried in parts, prepare.py --profile ray).
declare -A PROFILES=(
    [check]="setup gpu-tests quick-run fold-minilm fold-bert-base suite-eval suite"
    [packs]="setup quick-run quick-auto pack-auto bench-pack fold-minilm"
    [ray]="setup ray-import ray-slots"
)
# The order GPU evidence is gathered in, most needed first (benchmarks/perf/RESULTS.md, "GPU evidence by profile").
RANKED=(check packs ray)
RECORDED=$(cd "$(dirname "$0")" && pwd)/recorded.txt
next_profile() {
    local p
    for p in "${RANKED[@]}"; do
        grep -qE "^$p " "$RECORDED" 2>/dev/null || { echo "$p"; return; }
    done
    echo "${RANKED[0]}"   # every profile recorded: the check again, on today's code
}
PROFILE=${BELUGA_GPU_PROFILE:-next}
[[ $PROFILE == next ]] && PROFILE=$(next_profile)
if [[ -z ${PROFILES[$PROFILE]:-} ]]; then
    echo "BELUGA_GPU_PROFILE=$PROFILE: no such profile; the profiles are: $(printf '%s\n' "${!PROFILES[@]}" | sort | paste -sd,)" >&2
    exit 2
fi
OUT=${OUT:-$ROOT/gpu-out}
WORK=${BELUGA_GPU_WORK:-/tmp/beluga-gpu}
SITE=$WORK/site
PY=${PYTHON:-python3}
START=$(date +%s)
LOGS=$WORK/logs
SUMMARY=$OUT/summary.txt
if ((!DRY)); then  # the dry mode touches nothing: the suite runs it while a real check is under way
    mkdir -p "$OUT" "$LOGS"
    : >"$SUMMARY"
    : >"$WORK/windows"
fi

say() { echo "$*" | tee -a "$SUMMARY"; }

# step NAME CAP COMMAND...: at most CAP seconds, and never past the budget; SIGINT first, so pytest still prints
# what it ran. One line in the summary; the whole output in $OUT/NAME.log.
step() {
    local name=$1 cap=$2
    shift 2
    if ((DRY)); then
        local in=()
        for p in "${!PROFILES[@]}"; do [[ " ${PROFILES[$p]} " == *" $name "* ]] && in+=("$p"); done
        printf '%-16s cap %4d s  [%s]  %s\n' "$name" "$cap" "${in[*]}" "$*"
        return
    fi
    [[ " ${PROFILES[$PROFILE]} " == *" $name "* ]] || return 0
    local left=$((BUDGET - ($(date +%s) - START)))
    ((cap > left)) && cap=$left
    if ((cap < 5)); then
        say "$(printf '%-16s SKIPPED   the %d s budget is spent' "$name" "$BUDGET")"
        return
    fi
    local t0 t1 rc status from
    from=$(date +%T)
    t0=$(date +%s%N)
    (cd "$ROOT" && timeout -s INT -k 20 "$cap" "$@") >"$LOGS/$name.log" 2>&1
    rc=$?
    t1=$(date +%s%N)
    echo "$name $from $(date +%T)" >>"$WORK/windows"
    case $rc in
        0) status=ok ;;
        124 | 137) status="TIMED OUT" ;;
        *) status="FAILED $rc" ;;
    esac
    say "$(printf '%-16s %-10s %6s s (cap %d s)  %s' "$name" "$status" "$(((t1 - t0) / 1000000000)).$((((t1 - t0) / 100000000) % 10))" "$cap" \
        "$(grep -v '^\s*$' "$LOGS/$name.log" | tail -1 | cut -c1-150)")"
}

setup() {
    # The image as it is, before anything is added: benchmarks/gpu/image.txt is updated from this.
    "$PY" -m pip freeze >"$LOGS/image-freeze.txt" 2>/dev/null
    local manifest=$KIT/part1/manifest.json
    [[ -f $manifest ]] || { echo "no $manifest: carry part1 first (benchmarks/gpu/README.md)"; return 2; }
    local parts
    parts=$("$PY" -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["parts"]))' "$manifest")
    for p in $parts; do
        [[ -d $KIT/$p ]] || { echo "part $p has not arrived (the machine was given back between calls?)"; return 2; }
    done
    local commit
    commit=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["commit"])' "$manifest")
    [[ $commit == $(git -C "$ROOT" rev-parse HEAD 2>/dev/null) ]] ||
        echo "note: the kit was prepared at $commit; the checkout here is at another commit (tests run the checkout)"
    rm -rf "$SITE" "$WORK/joined"
    mkdir -p "$WORK/joined"
    # A wheel too large for one call (Ray's, profile "ray") came in byte chunks: joined here, checked against its
    # locked sha256, then installed with the others.
    "$PY" - "$manifest" "$KIT" "$WORK/joined" <<'EOF' || return 1
import hashlib, json, sys
from pathlib import Path
manifest, kit, joined = json.load(open(sys.argv[1])), Path(sys.argv[2]), Path(sys.argv[3])
for w in manifest.get("joined_wheels", []):
    h = hashlib.sha256()
    with (joined / w["file"]).open("wb") as out:
        for chunk in w["chunks"]:
            data = (kit / chunk).read_bytes()
            h.update(data)
            out.write(data)
    if h.hexdigest() != w["sha256"]:
        sys.exit(f"{w['file']}: joined from {len(w['chunks'])} chunks, sha256 {h.hexdigest()}; locked {w['sha256']}")
    print(f"{w['file']}: joined from {len(w['chunks'])} chunks, sha256 as locked")
EOF
    local joined=("$WORK"/joined/*.whl)
    [[ -e ${joined[0]} ]] || joined=()
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" \
        "$KIT"/part*/wheels/*.whl "${joined[@]}" "$KIT"/part1/project/*.whl || return 1
    cp -r "$KIT"/part1/model/. "$SITE"/
    # Registered with the image's interpreter rather than through PYTHONPATH: tests start subprocesses with
    # their own environment, or isolated (-I), and those must find beluga and its packages too. The checkout
    # comes first, so the tests run the code beside them; the scripts go beside the interpreter.
    local purelib bindir
    purelib=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    bindir=$("$PY" -c 'import os, sys; print(os.path.dirname(sys.executable))')
    printf '%s\n%s\n' "$ROOT" "$SITE" >"$purelib/beluga-gpu-check.pth" || return 1
    for f in "$SITE"/bin/*; do ln -sf "$f" "$bindir/"; done
    "$PY" - "$manifest" "$KIT" "$SITE" <<'EOF' || return 1
import hashlib, json, sys
from pathlib import Path
manifest, kit, site = json.load(open(sys.argv[1])), Path(sys.argv[2]), Path(sys.argv[3])
m = manifest["model"]
target = site / m["file"]
h = hashlib.sha256()
with target.open("wb") as out:
    for chunk in m["chunks"]:  # each "partN/model.safetensors.NNN", in order
        data = (kit / chunk).read_bytes()
        h.update(data)
        out.write(data)
if h.hexdigest() != m["sha256"] or target.stat().st_size != m["size"]:
    sys.exit(f"{m['file']}: sha256 {h.hexdigest()} ({target.stat().st_size} bytes), the package's RECORD says "
             f"{m['sha256']} ({m['size']} bytes)")
print(f"{m['file']}: {m['size']:,} bytes, sha256 {m['sha256'][:16]}… as its RECORD says")
EOF
    "$PY" -c 'import beluga_core, duckdb, pydantic, captum, datasets, stevedore, torch, transformers
from beluga_core.training.models import load_tokenizer
load_tokenizer("embedded:minilm")
print("beluga", beluga_core.__file__, "· torch", torch.__version__, "· transformers", transformers.__version__,
      "· duckdb", duckdb.__version__, "·", torch.cuda.get_device_name(0))'
}

if ((!DRY)); then
    export PATH=$SITE/bin:$PATH PYTHONUNBUFFERED=1
    export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
    # The device tool carries the working tree, but the .git beside it may lag (it showed the session's first
    # commit): the kit's manifest names the commit it was prepared at.
    kit_commit=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["commit"][:7])' "$KIT/part1/manifest.json" 2>/dev/null)
    say "beluga GPU check · $(date -u +%FT%TZ) · kit prepared at ${kit_commit:-?} · profile $PROFILE · budget $BUDGET s"
    say "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -1) · $(nproc) CPU cores · $("$PY" -V 2>&1)"
    export -f setup
    export KIT SITE OUT PY ROOT LOGS WORK
fi

step setup 30 bash -c setup
if ((!DRY)); then
    nvidia-smi dmon -s u -o T -d 1 >"$LOGS/dmon.txt" 2>&1 &
    DMON=$!
fi
step gpu-tests 85 "$PY" -m pytest -p no:cacheprovider -q -rfEs -m gpu tests
step quick-run 130 bash -c "rm -rf '$WORK'/quick.duckdb* && beluga run benchmarks/quick.toml --store '$WORK/quick.duckdb' &&
    beluga report '$WORK/quick.duckdb' && beluga report '$WORK/quick.duckdb' --format md --out '$LOGS/quick-report'"
step quick-auto 130 bash -c "rm -rf '$WORK'/quick-auto.* && sed 's/^workers = 2\$/workers = \"auto\"/' \
    benchmarks/quick.toml >'$WORK/quick-auto.toml' && grep -q '^workers = \"auto\"' '$WORK/quick-auto.toml' &&
    beluga run '$WORK/quick-auto.toml' --store '$WORK/quick-auto.duckdb' && beluga report '$WORK/quick-auto.duckdb'"
step pack-auto 40 bash -c "sed 's/^workers = 2\$/workers = \"auto\"/' benchmarks/quick-lora.toml \
    >'$WORK/quick-lora-auto.toml' && beluga run '$WORK/quick-lora-auto.toml' --store '$WORK/quick-lora.duckdb' --dry-run |
    grep -E '^(workers|packs)'"
step bench-pack 165 "$PY" -m benchmarks.perf.bench_pack --device cuda --ks 1 4 8 16 --precisions bf16 --workers 1 \
    --modes lora lora-pack --n 256
step ray-import 20 "$PY" -c "import ray; print('ray', ray.__version__)"
step ray-slots 450 "$PY" -m benchmarks.perf.bench_ray_slots --device cuda --tiny --slots 1 2 4 8 --rounds 3
step fold-minilm 35 "$PY" -m benchmarks.perf.bench_fold --skip-eval --repeats 3 --repeats-trainer 1
step fold-bert-base 70 "$PY" -m benchmarks.perf.bench_fold --skip-eval --model bert-base-random --n-train 4096 \
    --batch-size 32 --repeats 2 --repeats-trainer 1
step suite-eval 45 "$PY" -m benchmarks.perf.bench_fold --only-eval
step suite 145 "$PY" -m pytest -p no:cacheprovider -q -rfE -n 8 --dist loadfile -m "not gpu" tests

if ((DRY)); then
    echo "profile $PROFILE selected (BELUGA_GPU_PROFILE, else the first of ${RANKED[*]} not in recorded.txt)"
    for p in $(printf '%s\n' "${!PROFILES[@]}" | sort); do
        total=0
        for name in ${PROFILES[$p]}; do
            total=$((total + $(grep -oE "^step $name [0-9]+" "$0" | awk '{print $3}')))
        done
        echo "profile $p: budget $BUDGET s; the caps add up to $total s"
    done
    exit 0
fi
kill "$DMON" 2>/dev/null
# SM utilisation per step, from dmon's one-second samples inside each step's window.
"$PY" - "$WORK/windows" "$LOGS/dmon.txt" <<'EOF' | tee -a "$SUMMARY"
import sys
windows = [line.split() for line in open(sys.argv[1]) if line.strip()]
samples = []
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) > 2 and not line.startswith("#") and f[2].isdigit():
        samples.append((f[0], int(f[2])))
print("SM busy (nvidia-smi dmon, % of 1-s samples): step  mean  max  samples")
for name, start, end in windows:
    sm = [v for t, v in samples if start <= t <= end]
    if sm:
        print(f"  {name:<16} {sum(sm) / len(sm):5.1f} {max(sm):4d} {len(sm):6d}")
    else:
        print(f"  {name:<16}  (no samples)")
EOF
# The figures the steps printed: failures and skips of the GPU tests, the quick run's tables, bench_fold's tables.
say ""
say "gpu-tests:"
[[ -f $LOGS/gpu-tests.log ]] && grep -E '^(FAILED|ERROR|SKIPPED)|passed|failed' "$LOGS/gpu-tests.log" | tee -a "$SUMMARY"
for f in quick-run quick-auto pack-auto; do
    [[ -f $LOGS/$f.log ]] || continue
    say "$f (beluga report):"
    grep -E '^(workers|packs):' "$LOGS/$f.log" | tee -a "$SUMMARY"
    sed -n '/wall time/,$p' "$LOGS/$f.log" | grep -v '^\s*$' | head -60 | tee -a "$SUMMARY"
done
for f in fold-minilm fold-bert-base suite-eval; do
    [[ -f $LOGS/$f.log ]] || continue
    say "$f:"
    grep -E '^(\||precision|parameters|peak|whole|ratio)' "$LOGS/$f.log" | tee -a "$SUMMARY"
done
if [[ -f $LOGS/bench-pack.log ]]; then
    say "bench-pack:"
    grep -vE '^\s*$' "$LOGS/bench-pack.log" | tail -30 | tee -a "$SUMMARY"
fi
if [[ -f $LOGS/ray-slots.log ]]; then
    say "ray-slots:"
    grep -vE '^\s*$' "$LOGS/ray-slots.log" | tail -20 | tee -a "$SUMMARY"
fi
if [[ -f $LOGS/suite.log ]]; then
    say "suite:"
    grep -E '^(FAILED|ERROR)|passed|failed' "$LOGS/suite.log" | tail -40 | tee -a "$SUMMARY"
fi
say "total $(($(date +%s) - START)) s of $BUDGET s"
tar -czf "$OUT/logs.tar.gz" -C "$LOGS" .
