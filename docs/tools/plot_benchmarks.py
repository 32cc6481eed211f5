#!/usr/bin/env python3
"""Turns the JMH JSON results of kvcache-bench/run-benchmarks.sh into tables and plots.

    python3 docs/tools/plot_benchmarks.py docs/results docs/img

Reads the results from one subdirectory of docs/results per page of docs/benchmarks/ (ram-tier,
codec, disk-tier, ...): JMH's JSON files wherever they lie, and the other files by their names below.
Writes docs/results/summary.md (the tables the pages quote, cited by docs/benchmarks/method.md) and
PNG plots into the image directory. Throughput is converted from operations/s to GB/s (10^9 bytes) with the block
size; errors are JMH's 99.9% confidence half-widths.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the plots package beside this file

from plots import (checksums, clients, codec, disk_tier, engines, jvm_engines,  # noqa: E402
                   object_tier, puts_under_pressure, ram_tier, s3_api, sealing, server,
                   tiered_cache, traces)
from plots.common import load, size_label  # noqa: E402


def main():
    results_dir, img = sys.argv[1], sys.argv[2]
    os.makedirs(img, exist_ok=True)
    rows = load(results_dir)
    out = []
    ram_tier.ram_tables(rows, out, img)
    ram_tier.churn_table(rows, results_dir, out)
    ram_tier.peer_tables(rows, out, img)
    ram_tier.memory_table(rows, out)
    codec.codec_tables(rows, results_dir, out, img)
    codec.small_tables(rows, out)
    disk_tier.disk_tables(rows, out, img)
    disk_tier.cold_read_tables(rows, results_dir, out, img)
    disk_tier.disk_writer_table(rows, out, img)
    disk_tier.seam_tables(results_dir, out, img)
    disk_tier.prefix_pin_table(rows, out, img)
    sealing.sealing_tables(rows, results_dir, out, img)
    puts_under_pressure.put_path_tables(results_dir, out, img)
    puts_under_pressure.put_path_tables(results_dir, out, img, "put-path-in-place")
    tiered_cache.tiered_tables(rows, out, img)
    tiered_cache.durability_tables(rows, out, img)
    puts_under_pressure.spill_tables(rows, out, img)
    checksums.checksum_table(rows, out, img)
    traces.trace_tables(results_dir, out, img)
    traces.tier_tables(results_dir, out, img)
    traces.quota_tables(results_dir, out, img)
    engines.mlperf_tables(results_dir, out, img)
    clients.ram_hit_tables(results_dir, out, img)
    checksums.checked_reads_tables(results_dir, out, img)
    server.server_tables(results_dir, out, img)
    server.pinned_server_table(results_dir, out, img)
    server.setting_table(results_dir, out, img, "server-write-buffer", "buffer-1048576", size_label,
                         "Socket write buffer")
    server.setting_table(results_dir, out, img, "server-event-loops", "loops-2",
                         lambda n: f"{n} event loop{'s' if n > 1 else ''}", "Event-loop threads")
    server.events_table(results_dir, out, img)
    clients.client_tables(results_dir, out, img)
    clients.python_client_tables(results_dir, out, img)
    clients.load_floor_tables(results_dir, out, img)
    engines.vllm_ttft_tables(results_dir, out, img)
    codec.wire_tables(results_dir, out, img)
    object_tier.object_tier_tables(rows, results_dir, out, img)
    object_tier.ranged_get_tables(results_dir, out, img)
    s3_api.s3_api_tables(results_dir, out, img)
    jvm_engines.jvm_engine_tables(rows, results_dir, out, img)
    with open(os.path.join(results_dir, "summary.md"), "w") as f:
        f.write("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
