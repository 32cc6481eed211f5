#!/usr/bin/env bash
# Runs the benchmarks recorded in docs/benchmarks/ (one page per area) and writes JMH's JSON results to
# docs/results/<area>/, named as the pages are (ram-tier, codec, disk-tier, ...). All suites take about 45 minutes on 2 cores; run them on an otherwise idle machine.
#
#   kvcache-bench/run-benchmarks.sh                 # every suite
#   kvcache-bench/run-benchmarks.sh ram churn       # some suites: ram, churn, peers, memory, codec, disk, tiered, durability, spill, remote, wire
#   kvcache-bench/run-benchmarks.sh remote-lookup   # part of the remote suite: lookups and pins
#   kvcache-bench/run-benchmarks.sh durability-server   # part of the durability suite: the server
#   kvcache-bench/run-benchmarks.sh disk-io disk-writer   # parts of the disk suite
#   QUICK=1 kvcache-bench/run-benchmarks.sh ram     # one fork, short iterations
#   CODEC_PARAMS="-p chunkSizeBytes=262144" kvcache-bench/run-benchmarks.sh codec   # a subset
#   JMH_OPTS="-f 1 -wi 2 -w 1s -i 4 -r 1s" kvcache-bench/run-benchmarks.sh codec    # other JMH options
#
# Then: python3 docs/tools/plot_benchmarks.py docs/results docs/img
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${QUICK:-0}" = 1 ]; then
  jmh_opts=(-f 1 -wi 1 -w 500ms -i 3 -r 500ms)
else
  jmh_opts=(-f 3 -wi 2 -w 1s -i 4 -r 1s)
fi
if [ -n "${JMH_OPTS:-}" ]; then
  read -r -a jmh_opts <<< "$JMH_OPTS"
fi
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(ram churn peers memory codec disk tiered)

jvm_flags="-Xms2g -Xmx2g -XX:MaxDirectMemorySize=6g -Dchronicle.analytics.disable=true"
jvm_flags+=" --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED"
jvm_flags+=" --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED"
jvm_flags+=" --add-exports=java.base/jdk.internal.ref=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED"
jvm_flags+=" --add-exports=java.base/jdk.internal.misc=ALL-UNNAMED --add-exports=jdk.unsupported/sun.misc=ALL-UNNAMED"
jvm_flags+=" --add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED"
jvm_flags+=" $(bin/jdk-flags)"

./mvnw -q -B -DskipTests package
jar=kvcache-bench/target/benchmarks.jar
out=docs/results
mkdir -p "$out"

run() {
  local name=$1
  shift
  echo "== $name: $*"
  mkdir -p "$(dirname "$out/$name")"
  java -jar "$jar" "$@" "${jmh_opts[@]}" -jvmArgs "$jvm_flags" -rf json -rff "$out/$name.json" \
    > "$out/$name.txt"
  grep -E '^(Benchmark|[A-Za-z]+Benchmark\.)' "$out/$name.txt" | grep -v ':gc\.' || true
}

# lookups and pins of 128 keys, straight to the server and through a tiered cache over it
remote_lookups() {
  java -jar "$jar" 'RemoteClientBenchmark\.(kvcacheLookup128|kvcachePin128|tieredLookup128|tieredPin128)$' \
    -p blockBytes=262144 -t 1 -f 2 -jvmArgs "$jvm_flags" \
    -rf json -rff "$out/java-client/remote-lookup.json" > "$out/java-client/remote-lookup.txt"
  grep -E '^RemoteClientBenchmark\.' "$out/java-client/remote-lookup.txt" \
    | grep -vE ':p0\.(00|90|95|999|9999)|:p1\.00' || true
}

# PUTs to a server child process (1 GiB of RAM over a disk tier) under each durability mode
run_durability_server() {
  run durability/durability-server ServerDurabilityBenchmark -t 1 -jvmArgsAppend "-Dkvcache.server.jar=$PWD/kvcache-server/target/kvcache-server.jar"
}

for suite in "${suites[@]}"; do
  case "$suite" in
    ram)
      # One size per JMH run, so each operation is measured minutes, not half an hour, from its
      # baseline: the machine's background load drifts.
      for threads in 1 2; do
        for size in 65536 1048576 4194304 33554432; do
          run "ram-tier/ram-t$threads-$size" RamTierBenchmark -t "$threads" -p blockSizeBytes="$size" -prof gc
        done
      done
      ;;
    churn) run ram-tier/churn RamTierChurnBenchmark -t 1 ;;
    peers)
      run ram-tier/peers-t1 PeerBenchmark -t 1
      run ram-tier/peers-t2 PeerBenchmark -t 2
      ;;
    memory) run ram-tier/memory-copy MemoryCopyBenchmark -t 1 ;;
    codec)
      # one codec thread: the codec beside raw LZ4 (alone, and chained with the same filter by
      # hand); two codec threads: encode and decode only, the baselines do not change
      kv="-p data=kv_prose_fp16,kv_prose_bf16 -p filter=NONE,BYTE_SHUFFLE_2,BIT_SHUFFLE_2"
      rnd="-p data=random -p filter=NONE,BYTE_SHUFFLE_2"
      run codec/codec-kv-t1 CodecBenchmark -t 1 $kv -p codecThreads=1 ${CODEC_PARAMS:-}
      run codec/codec-kv-t2 'CodecBenchmark.(en|de)code$' -t 1 $kv -p codecThreads=2 ${CODEC_PARAMS:-}
      run codec/codec-random-t1 CodecBenchmark -t 1 $rnd -p codecThreads=1 ${CODEC_PARAMS:-}
      run codec/codec-random-t2 'CodecBenchmark.(en|de)code$' -t 1 $rnd -p codecThreads=2 ${CODEC_PARAMS:-}
      run codec/filters FilterBenchmark -t 1
      run codec/checksums ChecksumBenchmark -t 1
      run codec/zstd ZstdReferenceBenchmark -t 1
      ;;
    disk)
      run disk-tier/disk-reopen DiskReopenBenchmark -t 1
      for size in 262144 2097152 33554432; do
        run "disk-tier/disk-io-$size" 'DiskThroughputBenchmark\.(put|baselinePut|getInto|leaseGet|baselineGet)$' \
          -t 1 -p blockSizeBytes="$size"
      done
      run disk-tier/disk-writer 'DiskThroughputBenchmark\.(put|writerPut|gatheredPut|baselinePut)$' -t 1 -prof gc
      # drops the page cache: needs root; the tier's reads past the page cache, then through the
      # mapping; CPU seconds of the reading thread per GiB in disk-cold-cpu.jsonl
      rm -f "$out/disk-tier/disk-cold-cpu.jsonl"
      jvm_flags_before=$jvm_flags
      jvm_flags+=" -Dkvcache.bench.cpu.out=$PWD/$out/disk-tier/disk-cold-cpu.jsonl"
      run disk-tier/disk-cold DiskColdReadBenchmark -t 1 -p directReads=true
      run disk-tier/disk-cold-mapped 'DiskColdReadBenchmark\.(readAll|leaseAllBatched)$' -t 1 -p directReads=false
      jvm_flags=$jvm_flags_before
      run disk-tier/disk-peers DiskPeerBenchmark -t 1
      run disk-tier/disk-latency-t1 DiskPutLatencyBenchmark -t 1
      run disk-tier/disk-latency-t2 DiskPutLatencyBenchmark -t 2
      run disk-tier/disk-churn DiskChurnBenchmark -t 1
      ;;
    tiered) run tiered-cache/tiered TieredCacheBenchmark -t 1 ;;
    durability)
      # puts through RAM over disk under each durability mode, beside the disk tier alone
      run durability/durability 'TieredCacheBenchmark\.put$' -t 1 \
        -p stack=ram+disk,ram+disk-write-behind,ram+disk-write-through,disk,ram+disk-write-through-sync,disk-sync
      run_durability_server ;;
    durability-server) run_durability_server ;;
    spill)
      # writes that outrun the disk: raw file writes, the disk tier, RAM over disk (8 threads,
      # sample mode, iterations of 10 s so that the page cache fills)
      saved=("${jmh_opts[@]}")
      jmh_opts=(-t 8 -f 2 -wi 1 -w 10s -i 3 -r 10s)
      run puts-under-pressure/spill-back-pressure-64m-files SpillBackPressureBenchmark \
        -p blockSizeBytes=67108864 -p stack=file,file-fsync,disk
      run puts-under-pressure/spill-back-pressure-64m-ram SpillBackPressureBenchmark \
        -p blockSizeBytes=67108864 -p stack=ram-small+disk,ram+disk,ram-large+disk -p spillThreads=1,2
      jmh_opts=(-t 8 -f 1 -wi 1 -w 10s -i 3 -r 10s)
      run puts-under-pressure/spill-back-pressure-2m SpillBackPressureBenchmark \
        -p blockSizeBytes=2097152 -p stack=file,file-fsync,ram+disk -p spillThreads=1,2
      jmh_opts=("${saved[@]}")
      ;;
    checksum)
      # the server jar of today beside one built without checksums (git worktree add /tmp/before
      # d089890 && (cd /tmp/before && ./mvnw -q package -DskipTests -pl kvcache-server -am));
      # three runs, the two arms in alternating order, since the machine drifts between them
      before=${KVCACHE_SERVER_JAR_BEFORE:?set KVCACHE_SERVER_JAR_BEFORE to a server jar built without checksums}
      for rep in 1 2 3; do
        order=none,crc32c
        [ $((rep % 2)) = 1 ] || order=crc32c,none
        java -jar "$jar" 'remote\.EndToEndChecksumBenchmark' -p checksums=$order -f 2 -t 1 -jvmArgs "$jvm_flags" \
          -jvmArgsAppend "-Dkvcache.server.jar=$PWD/kvcache-server/target/kvcache-server.jar -Dkvcache.server.jar.before=$before" \
          -rf json -rff "$out/checksums/checksum-$rep.json" > "$out/checksums/checksum-$rep.txt"
        grep -E '^EndToEndChecksumBenchmark\.' "$out/checksums/checksum-$rep.txt"
      done ;;
    remote)
      # the Java client against a kvcache-server child process, Jedis against a redis-server one
      command -v redis-server >/dev/null || apt-get install -y -q redis-server >/dev/null
      # the benchmark's own warm-up (5 x 5 s): each trial starts a fresh server whose JIT needs it
      # batches of eight for the blocks small enough to gain from them
      for threads in 1 4; do
        java -jar "$jar" 'RemoteClientBenchmark\.(kvcacheGet|kvcachePut|kvcacheLookup128|redisGet|redisSet)$' \
          -t "$threads" -f 1 -jvmArgs "$jvm_flags" -prof gc \
          -rf json -rff "$out/java-client/remote-t$threads.json" > "$out/java-client/remote-t$threads.txt"
        java -jar "$jar" 'RemoteClientBenchmark\.(kvcacheGetBatch8|redisMget8)$' -p blockBytes=262144,2097152 \
          -t "$threads" -f 1 -jvmArgs "$jvm_flags" -prof gc \
          -rf json -rff "$out/java-client/remote-batch-t$threads.json" > "$out/java-client/remote-batch-t$threads.txt"
        cat "$out/java-client/remote-t$threads.txt" "$out/java-client/remote-batch-t$threads.txt" \
          | grep -E '^RemoteClientBenchmark\.' | grep -v ':p0\.9[0-9]9\|:p1\.00' || true
      done
      remote_lookups
      ;;
    remote-lookup) remote_lookups ;;
    wire)
      # the wire codec against plain blocks, on loopback as it is and shaped to a slower link
      # (tc's token bucket on lo: needs root; removed again on exit)
      rate=${WIRE_RATE:-1gbit}
      java -jar "$jar" WireCodecBenchmark -t 1 -jvmArgs "$jvm_flags" \
        -rf json -rff "$out/codec/wire-loopback.json" > "$out/codec/wire-loopback.txt"
      trap 'tc qdisc del dev lo root 2>/dev/null || true' EXIT
      tc qdisc add dev lo root tbf rate "$rate" burst 256kb latency 50ms
      java -jar "$jar" WireCodecBenchmark -t 1 -jvmArgs "$jvm_flags" \
        -rf json -rff "$out/codec/wire-$rate.json" > "$out/codec/wire-$rate.txt"
      tc qdisc del dev lo root
      grep -hE '^(WireCodecBenchmark\.|wire:)' "$out/codec/wire-loopback.txt" "$out/codec/wire-$rate.txt" || true
      ;;
    disk-reopen) run disk-tier/disk-reopen DiskReopenBenchmark -t 1 ;;
    disk-writer)   # a block put whole, in 16 KiB parts through the tier's writer, or gathered first
      run disk-tier/disk-writer 'DiskThroughputBenchmark\.(put|writerPut|gatheredPut|baselinePut)$' -t 1 -prof gc
      ;;
    disk-io)
      for size in 262144 2097152 33554432; do
        run "disk-tier/disk-io-$size" 'DiskThroughputBenchmark\.(put|baselinePut|getInto|leaseGet|baselineGet)$' \
          -t 1 -p blockSizeBytes="$size"
      done
      ;;
    *) echo "unknown suite '$suite' (ram, churn, peers, memory, codec, disk, tiered, remote, wire, or disk-reopen, disk-io, disk-writer, remote-lookup)" >&2; exit 2 ;;
  esac
done
echo "results in $out"
