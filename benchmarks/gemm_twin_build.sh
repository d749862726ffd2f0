#!/bin/sh
# Build the GLSL twins of benchmarks/gemm_twin.py into build/twin (run in the test userland: it has glslang).
# A name is ACC_WMxWN_SMxSN_ktKT[_variant...] (16x16x16 tiles); variants: single, const (sizes 4096 compiled in),
# afirst (see benchmarks/gemm_twin.comp).
set -e
rm -rf build/twin
mkdir -p build/twin
mk() {
    acc=$1 wm=$2 wn=$3 sm=$4 sn=$5 kt=$6
    shift 6
    name=${acc}_${wm}x${wn}_${sm}x${sn}_kt${kt}
    defs=""
    for v in "$@"; do
        name=${name}_$v
        case $v in
            single) defs="$defs -DSINGLE" ;;
            const) defs="$defs -DCONST_SIZE=4096" ;;
            afirst) defs="$defs -DA_FIRST" ;;
        esac
    done
    acc_t=float
    [ "$acc" = f16 ] && acc_t=float16_t
    glslang -V --target-env vulkan1.3 -S comp -DTM=16 -DTN=16 -DTK=16 -DWM=$wm -DWN=$wn -DSM=$sm -DSN=$sn -DKT=$kt \
        -DIN_T=float16_t -DACC_T=$acc_t $defs benchmarks/gemm_twin.comp -o build/twin/$name.spv >/dev/null
    echo "built $name"
}
mk f16 2 4 4 2 2
mk f16 2 4 4 2 2 single const afirst
mk f32 2 4 4 2 2
mk f32 2 4 4 2 2 single
mk f32 2 4 4 2 2 const
mk f32 2 4 4 2 2 afirst
mk f32 2 4 4 2 2 single const afirst
mk f32 2 4 4 2 1
mk f32 2 4 4 2 1 single const afirst
mk f32 2 2 4 4 2 single const afirst
mk f32 4 2 2 4 2
