// The llm-d KV-cache indexer, as a router runs it, subscribed to one ZMQ endpoint of KV events:
// a probe for kvcache's tests. It prints "ready" once subscribed, then answers each line of
// standard input:
//
//	score <model> <token>,<token>,...   the indexer's ScoreTokens for the prompt: a JSON object of
//	                                    pod to score (empty: no pod holds its first block)
//	quit                                stops
//
// Flags: -endpoint (the PUB socket to dial), -pod (the pod the events are indexed under when
// their topic names none), -block-tokens (the indexer's block size).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/llm-d/llm-d-kv-cache/pkg/kvcache"
	"github.com/llm-d/llm-d-kv-cache/pkg/kvcache/kvblock"
	"github.com/llm-d/llm-d-kv-cache/pkg/kvevents"
	"github.com/llm-d/llm-d-kv-cache/pkg/kvevents/engineadapter"
)

func main() {
	endpoint := flag.String("endpoint", "", "the ZMQ PUB endpoint to subscribe to")
	pod := flag.String("pod", "kvcache", "the pod identifier of the subscription")
	blockTokens := flag.Int("block-tokens", 16, "tokens per block of the indexer")
	flag.Parse()
	if *endpoint == "" {
		fmt.Fprintln(os.Stderr, "llmd-probe: -endpoint is required")
		os.Exit(2)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	tokens, err := kvblock.NewChunkedTokenDatabase(&kvblock.TokenProcessorConfig{BlockSizeTokens: *blockTokens})
	check(err)
	config, err := kvcache.NewDefaultConfig()
	check(err)
	indexer, err := kvcache.NewKVCacheIndexer(ctx, config, tokens)
	check(err)
	adapter, err := engineadapter.NewAdapter("vllm")
	check(err)
	pool := kvevents.NewPool(&kvevents.Config{TopicFilter: "kv@", Concurrency: 1},
		indexer.KVBlockIndex(), tokens, adapter)
	pool.Start(ctx)
	check(kvevents.NewSubscriberManager(pool).EnsureSubscriber(ctx, *pod, *endpoint, "kv@", true))
	fmt.Println("ready")

	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	for in.Scan() {
		fields := strings.Fields(in.Text())
		switch {
		case len(fields) == 1 && fields[0] == "quit":
			return
		case len(fields) == 3 && fields[0] == "score":
			prompt, err := parseTokens(fields[2])
			check(err)
			scores, err := indexer.ScoreTokens(ctx, prompt, fields[1], nil, nil)
			check(err)
			out, err := json.Marshal(scores)
			check(err)
			fmt.Println(string(out))
		default:
			fmt.Fprintf(os.Stderr, "llmd-probe: unknown command %q\n", in.Text())
			os.Exit(2)
		}
	}
}

func parseTokens(s string) ([]uint32, error) {
	parts := strings.Split(s, ",")
	tokens := make([]uint32, len(parts))
	for i, p := range parts {
		t, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return nil, err
		}
		tokens[i] = uint32(t)
	}
	return tokens, nil
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "llmd-probe:", err)
		os.Exit(1)
	}
}
