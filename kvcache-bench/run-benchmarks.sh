#!/usr/bin/env bash
# Runs the RAM-tier benchmarks as recorded in docs/benchmarks.md and writes JMH's JSON results
# to docs/results/. Takes about 35 minutes on 2 cores; run it on an otherwise idle machine.
#
#   kvcache-bench/run-benchmarks.sh            # everything
#   kvcache-bench/run-benchmarks.sh quick      # one fork, short iterations (a few minutes)
#
# Then: python3 docs/tools/plot_benchmarks.py docs/results docs/img
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-full}
if [ "$mode" = quick ]; then
  jmh_opts=(-f 1 -wi 1 -w 500ms -i 3 -r 500ms)
else
  jmh_opts=(-f 2 -wi 3 -w 1s -i 5 -r 1s)
fi

jvm_flags="-Xms2g -Xmx2g -XX:MaxDirectMemorySize=6g -Dchronicle.analytics.disable=true"
jvm_flags+=" --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED"
jvm_flags+=" --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED"
jvm_flags+=" --add-exports=java.base/jdk.internal.ref=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED"
jvm_flags+=" --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --add-exports=jdk.unsupported/sun.misc=ALL-UNNAMED"
jvm_flags+=" --add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED"
if [ "$(java -XshowSettings:properties -version 2>&1 | awk -F= '/java.specification.version/ {gsub(/ /,"",$2); print $2}')" -ge 24 ]; then
  jvm_flags+=" --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow"
fi

./mvnw -q -B -DskipTests package
jar=kvcache-bench/target/benchmarks.jar
out=docs/results
mkdir -p "$out"

run() {
  local name=$1
  shift
  echo "== $name: $*"
  java -jar "$jar" "$@" "${jmh_opts[@]}" -jvmArgs "$jvm_flags" -rf json -rff "$out/$name.json" \
    | tee "$out/$name.txt" | grep -E '^(Benchmark|[A-Za-z]+Benchmark\.)' || true
}

run ram-t1 'RamTierBenchmark' -t 1 -prof gc
run ram-t2 'RamTierBenchmark' -t 2 -prof gc
run peers-t1 'PeerBenchmark' -t 1
run peers-t2 'PeerBenchmark' -t 2
run memory-copy 'MemoryCopyBenchmark' -t 1
echo "results in $out"
