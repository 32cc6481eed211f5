package dev.kvcache.server.events;

import io.micronaut.context.annotation.ConfigurationProperties;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;

/**
 * The KV events' settings, {@code kvcache.events.*}: off unless {@code endpoint} is set. The
 * defaults are those of vLLM's {@code ZmqEventPublisher}, but for the interval between batches.
 */
@ConfigurationProperties("kvcache.events")
public class EventSettings {

  private String endpoint;
  private String replayEndpoint;
  private String pool;
  private int queueEvents = 100_000;
  private int keptBatches = 10_000;
  private int highWaterMark = 100_000;
  private Duration interval = Duration.ofMillis(10);

  /** Whether events are published: an endpoint is set. */
  public boolean enabled() {
    return endpoint != null && !endpoint.isBlank();
  }

  /** Where the PUB socket binds, such as {@code tcp://*:5557}; null: no events. */
  public String getEndpoint() {
    return endpoint;
  }

  public void setEndpoint(String endpoint) {
    this.endpoint = endpoint;
  }

  /** Where the replay socket binds, such as {@code tcp://*:5558}; null: no replays. */
  public String getReplayEndpoint() {
    return replayEndpoint;
  }

  public void setReplayEndpoint(String replayEndpoint) {
    this.replayEndpoint = replayEndpoint;
  }

  /**
   * The {@code <pod>} of the topic {@code kv@<pod>@<model>}: the name routers give this server
   * (a pod's name under Kubernetes, where it is the host name); default the host name.
   */
  public String getPool() {
    if (pool == null || pool.isBlank()) {
      try {
        return InetAddress.getLocalHost().getHostName();
      } catch (UnknownHostException e) {
        return "kvcache";
      }
    }
    return pool;
  }

  public void setPool(String pool) {
    if (pool != null && pool.indexOf('@') >= 0) {
      throw new IllegalArgumentException("kvcache.events.pool '" + pool + "' may not hold '@'");
    }
    this.pool = pool;
  }

  /** Events that may wait for a batch; more are dropped and leave a gap in the numbers. */
  public int getQueueEvents() {
    return queueEvents;
  }

  public void setQueueEvents(int queueEvents) {
    this.queueEvents = queueEvents;
  }

  /** Batches kept for replay. */
  public int getKeptBatches() {
    return keptBatches;
  }

  public void setKeptBatches(int keptBatches) {
    this.keptBatches = keptBatches;
  }

  /** Batches the PUB socket holds for a subscriber that reads slowly. */
  public int getHighWaterMark() {
    return highWaterMark;
  }

  public void setHighWaterMark(int highWaterMark) {
    this.highWaterMark = highWaterMark;
  }

  /** How long an event may wait to go out in a batch. */
  public Duration getInterval() {
    return interval;
  }

  public void setInterval(Duration interval) {
    this.interval = interval;
  }
}
