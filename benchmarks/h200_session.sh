#!/bin/bash
# One measuring run of the model, its kernels and the user path on the lent H200 (docs/perf.md says which run used
# it). Run from the repository root on the device machine, with the Vulkan loader set up as docs/vulkan.md says;
# every step's output goes to a numbered file under $OUT (at most 8 files come back), each step under its own time
# limit so that one slow step does not take the others' time.
set -u
: "${OUT:?set OUT to the folder for the outputs}"
export PYTHONPATH=src PYTHONUNBUFFERED=1
GGML_CASES="ggml decode d128 h8 kv4096,ggml decode d128 h32/8 kv4096,ggml decode d128 h8 kv16384,\
ggml decode d256 h32/2 kv10000,ggml decode d256 h32/2 kv20000,ggml prefill d256 h32/2 q512 kv10000,\
ggml prefill d256 h32/2 q512 kv20000,ggml decode d64 h64/8 q4 kv7680"
step() {  # step FILE SECONDS COMMAND...
    local file=$1 limit=$2; shift 2
    echo "### $(date -u +%H:%M:%S) $*" >> "$OUT/$file"
    timeout "$limit" "$@" 2>&1 | grep -v "spirv-val" >> "$OUT/$file"
    echo "### exit ${PIPESTATUS[0]}" >> "$OUT/$file"
}
# decode first: it runs no quantized GEMM (a 16-token prefill runs the GEMVs), so a fault in the GEMM, whose 128 x 128
# register staging had not run on the H200 when this was written, cannot cost the decode numbers
steps=${STEPS:-decode,fused,model,quant,attention,peer,user,first,prefill}
for s in ${steps//,/ }; do
    case $s in
        model) step 1_model.txt 120 python3 benchmarks/model_h200.py --out /tmp/model_h200.json
               cat /tmp/model_h200.json >> "$OUT/1_model.txt" 2>/dev/null ;;
        decode) step 2_profile.txt 120 python3 benchmarks/model_profile.py --prompt 16 --depth 4096 --barriers --folds ;;
        prefill) step 2_profile.txt 80 python3 benchmarks/model_profile.py --prompt 512 --depth 0 ;;
        quant) step 3_quant.txt 100 python3 benchmarks/quant_h200.py --out /tmp/quant_h200.json ;;
        # the fused attention combine (docs/attention.md) beside the two launches: whether to turn FUSED_COMBINE on
        fused) step 4_attention.txt 60 python3 benchmarks/attention_h200.py /tmp/att_fused --cases "$GGML_CASES" \
                   --fused --no-parity --no-arithmetic --reps 10 ;;
        attention) step 4_attention.txt 120 python3 benchmarks/attention_h200.py /tmp/att --cases "$GGML_CASES" \
                       --max-configs 1 --per-tile 0 --no-parity --no-arithmetic ;;
        peer) step 5_peer.txt 90 python3 benchmarks/llama_peer.py /tmp/lp ;;
        user) step 6_user_path.txt 100 python3 benchmarks/user_path.py
              step 6_user_path.txt 60 python3 benchmarks/host_cost.py --device 0 --calls 200 --wall ;;
        first) step 7_first_call.txt 90 python3 benchmarks/first_call.py --runs 1 --breakdown --import-costs 5
               # again with every module's .pyc written first, as an installed package has them
               python3 -m compileall -q src >> "$OUT/7_first_call.txt" 2>&1
               step 7_first_call.txt 90 python3 benchmarks/first_call.py --runs 1 --breakdown --import-costs 5 ;;
        # the timing path's settling after an idle GPU: what it changes and what it costs (docs/runtime.md "Timing")
        settle) step 8_settle.txt 60 python3 benchmarks/settle_check.py --rounds 3 --idle 3 ;;
        *) echo "unknown step $s" >&2; exit 2 ;;
    esac
done
