#!/usr/bin/env bash
# kvcache's KV events as llm-d's KV-cache indexer reads them: builds the indexer
# (github.com/llm-d/llm-d-kv-cache, pinned in probe/go.mod) into a probe that subscribes to a ZMQ
# endpoint and scores prompts on request, then runs the tests tagged llm-d against it
# (kvcache-server's LlmdIndexerTest): the scores follow the blocks the publisher stores, removes
# and clears, then the blocks a running server holds as they are put, deleted and evicted, and an
# indexer that was away gets what it missed from the server's replay socket. docs/routing.md says
# what a router learns.
#
#   routing/llm-d/check.sh
#
# The probe is built once under routing/target (delete it to build again), with the Go toolchain
# and its caches. Settings (environment): GO (go on the PATH, else /usr/local/go/bin/go).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
probe=$repo/routing/target/llmd-probe

say() { printf '[llm-d] %s\n' "$*"; }
die() { printf '[llm-d] FAILED: %s\n' "$*" >&2; exit 1; }

if [[ ! -x $probe || $here/probe/main.go -nt $probe || $here/probe/go.mod -nt $probe ]]; then
  go=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
  [[ -x $go ]] || die "the probe is not built ($probe) and there is no Go toolchain to build it (set GO)"
  say "building the llm-d indexer probe into $probe"
  (cd "$here/probe" && GOFLAGS=-mod=readonly "$go" build -o "$probe" .) \
    || die "could not build the probe from $here/probe"
fi

say "the indexer against kvcache's publisher (LlmdIndexerTest)"
cd "$repo"
./mvnw -B -ntp -q -pl kvcache-server -am test -Dtest=LlmdIndexerTest \
  -Dsurefire.failIfNoSpecifiedTests=false -Dtest.excludedGroups=none \
  -Dkvcache.llmd.probe="$probe" || die "LlmdIndexerTest failed"
report=$repo/kvcache-server/target/surefire-reports/dev.kvcache.server.events.LlmdIndexerTest.txt
[[ -f $report ]] || die "LlmdIndexerTest did not run"
grep -q "Tests run: [1-9][0-9]*, Failures: 0, Errors: 0, Skipped: 0" "$report" \
  || die "LlmdIndexerTest: $(sed -n 4p "$report")"
say "passed"
