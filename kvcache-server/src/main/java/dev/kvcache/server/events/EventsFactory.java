package dev.kvcache.server.events;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.binder.MeterBinder;
import io.micronaut.context.annotation.Bean;
import io.micronaut.context.annotation.Context;
import io.micronaut.context.annotation.Factory;
import io.micronaut.context.annotation.Requires;
import jakarta.inject.Singleton;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Starts the KV events with the server when {@code kvcache.events.endpoint} is set: binds the
 * publisher, has the cache's tiers tell the feed what they store and drop, and adds the events'
 * meters ({@code kvcache_events_*}).
 */
@Factory
class EventsFactory {

  private static final Logger log = LoggerFactory.getLogger(EventsFactory.class);

  @Singleton
  EngineBlocks engineBlocks(EventSettings settings) {
    return new EngineBlocks(settings.enabled());
  }

  /**
   * Started with the server, so that a bad endpoint stops the start; handed to the tiers with
   * the server's other listeners ({@code TierListeners}).
   */
  @Context
  @Requires(property = "kvcache.events.endpoint")
  @Bean(preDestroy = "close")
  KvEventFeed feed(EventSettings settings, EngineBlocks blocks) {
    KvEventPublisher publisher = new KvEventPublisher(settings.getEndpoint(),
        settings.getReplayEndpoint(), settings.getQueueEvents(), settings.getKeptBatches(),
        settings.getHighWaterMark(), settings.getInterval());
    KvEventFeed feed = new KvEventFeed(blocks, publisher, settings.getPool());
    log.info("KV events on {}{}, topics kv@{}@<model>", publisher.endpoint(),
        publisher.replayEndpoint() == null ? "" : " (replays on " + publisher.replayEndpoint()
            + ")", settings.getPool());
    return feed;
  }

  @Singleton
  @Requires(property = "kvcache.events.endpoint")
  MeterBinder eventMeters(KvEventFeed feed, EngineBlocks blocks) {
    KvEventPublisher publisher = feed.publisher();
    return registry -> {
      FunctionCounter.builder("kvcache.events.batches", publisher, KvEventPublisher::batches)
          .description("KV event batches published").register(registry);
      FunctionCounter.builder("kvcache.events.bytes", publisher, KvEventPublisher::bytes)
          .description("bytes of the KV event batches published").register(registry);
      FunctionCounter.builder("kvcache.events.dropped", publisher, KvEventPublisher::dropped)
          .description("KV events dropped from a full queue (a gap in the numbers)")
          .register(registry);
      FunctionCounter.builder("kvcache.events.replays", publisher, KvEventPublisher::replays)
          .description("replay requests answered").register(registry);
      FunctionCounter.builder("kvcache.events.unnamed", feed, KvEventFeed::unnamed)
          .description("blocks stored that no PUT named with its engine block: not told")
          .register(registry);
      Gauge.builder("kvcache.events.engine.blocks", blocks, EngineBlocks::size)
          .description("engine blocks the server keeps names of").register(registry);
    };
  }
}
