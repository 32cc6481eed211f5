// The llm-d KV-cache indexer, as a router runs it, subscribed to one ZMQ endpoint of KV events:
// a probe for kvcache's tests. It prints "ready" once subscribed, then answers each line of
// standard input:
//
//	score <model> <token>,<token>,...   the indexer's ScoreTokens for the prompt: a JSON object of
//	                                    pod to score (empty: no pod holds its first block)
//	unsubscribe                         drops the subscription, as a router that restarts does
//	subscribe                           subscribes again
//	replay <endpoint> <from>            asks kvcache's replay socket (ZMQ ROUTER) for the batches from
//	                                    number <from> on and hands each to the indexer as the
//	                                    subscription would; prints how many came
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
	"time"

	zmq4 "github.com/go-zeromq/zmq4"

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
	subscribers := kvevents.NewSubscriberManager(pool)
	check(subscribers.EnsureSubscriber(ctx, *pod, *endpoint, "kv@", true))
	fmt.Println("ready")

	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	for in.Scan() {
		fields := strings.Fields(in.Text())
		switch {
		case len(fields) == 1 && fields[0] == "quit":
			return
		case len(fields) == 1 && fields[0] == "unsubscribe":
			subscribers.RemoveSubscriber(ctx, *pod)
			fmt.Println("ok")
		case len(fields) == 1 && fields[0] == "subscribe":
			check(subscribers.EnsureSubscriber(ctx, *pod, *endpoint, "kv@", true))
			fmt.Println("ok")
		case len(fields) == 3 && fields[0] == "replay":
			from, err := strconv.ParseUint(fields[2], 10, 64)
			check(err)
			n, err := replay(ctx, pool, fields[1], from)
			check(err)
			fmt.Println(n)
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

// replay asks the ROUTER socket at endpoint for the batches from number from on (frames: an empty
// one and the number, 8 bytes big-endian) and hands each answer [empty, topic, number, batch] to
// the pool, until the end [empty, empty, 0xFF x 8, empty]; how many batches came.
func replay(ctx context.Context, pool *kvevents.Pool, endpoint string, from uint64) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	dealer := zmq4.NewDealer(ctx)
	defer dealer.Close()
	if err := dealer.Dial(endpoint); err != nil {
		return 0, err
	}
	start := make([]byte, 8)
	for i := 0; i < 8; i++ {
		start[i] = byte(from >> (56 - 8*i))
	}
	if err := dealer.Send(zmq4.NewMsgFrom([]byte{}, start)); err != nil {
		return 0, err
	}
	n := 0
	for {
		msg, err := dealer.Recv()
		if err != nil {
			return n, err
		}
		if len(msg.Frames) != 4 {
			return n, fmt.Errorf("a replay answer of %d frames", len(msg.Frames))
		}
		topic, seq, payload := msg.Frames[1], msg.Frames[2], msg.Frames[3]
		if len(topic) == 0 {
			return n, nil
		}
		var number uint64
		for _, b := range seq {
			number = number<<8 | uint64(b)
		}
		pool.AddTask(&kvevents.RawMessage{Topic: string(topic), Sequence: number, Payload: payload})
		n++
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
