#!/usr/bin/env bash
# Runs the Jlama benchmarks recorded in docs/benchmarks/jvm-engines.md and writes their results to
# docs/results/jvm-engines/: first-token.json (JMH: the time to first token at 2,000 and 8,000
# prompt tokens, computed, or loaded from RAM, from disk with the page cache dropped, and from a
# kvcache-server process) and conversation.json (ConversationReplay: a Mooncake conversation's
# turns). Needs JDK 22 or newer (JAVA_HOME) and root (to drop the page cache). About 40 minutes on
# 2 cores; run on an otherwise idle machine.
#
#   kvcache-jlama-bench/run-benchmarks.sh                 # both
#   kvcache-jlama-bench/run-benchmarks.sh first-token     # one: first-token, conversation
#   JMH_OPTS="-f 1 -wi 1 -i 2" kvcache-jlama-bench/run-benchmarks.sh first-token
#
# Then: python3 docs/tools/plot_benchmarks.py docs/results docs/img
set -euo pipefail
cd "$(dirname "$0")/.."
java=${JAVA_HOME:+$JAVA_HOME/bin/}java
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(first-token conversation)

./mvnw -q -B -ntp -DskipTests package -pl kvcache-server,kvcache-jlama-bench -am
jar=kvcache-jlama-bench/target/jlama-benchmarks.jar
out=docs/results/jvm-engines
mkdir -p "$out"
for part in "${parts[@]}"; do
  case "$part" in
    first-token)
      read -r -a jmh_opts <<< "${JMH_OPTS:-}"
      "$java" -Dkvcache.server.jar=kvcache-server/target/kvcache-server.jar -jar "$jar" \
        FirstTokenBenchmark "${jmh_opts[@]}" -rf json -rff "$out/first-token.json" ;;
    conversation)
      "$java" --add-modules jdk.incubator.vector $(bin/jdk-flags "$java") -Xmx6g \
        -XX:MaxDirectMemorySize=4g -cp "$jar" dev.kvcache.jlama.bench.ConversationReplay \
        --turns 12 --block-tokens 64 --repeats 3 --out "$out/conversation.json" ;;
    *) echo "unknown part: $part (first-token, conversation)" >&2; exit 2 ;;
  esac
done
