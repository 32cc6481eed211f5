package dev.kvcache.server.http;

import io.micronaut.context.event.ApplicationEventListener;
import io.micronaut.context.event.BeanCreatedEvent;
import io.micronaut.context.event.BeanCreatedEventListener;
import io.micronaut.http.server.netty.NettyServerCustomizer;
import io.micronaut.runtime.server.event.ServerShutdownEvent;
import io.netty.channel.Channel;
import io.netty.channel.ServerChannel;
import jakarta.inject.Singleton;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Closes the server's listening sockets when its stop begins, before the graceful stop drains the
 * requests under way: a connection attempted after {@code SIGTERM} is then refused by the kernel,
 * instead of completed into the socket's backlog and reset when the socket closes.
 *
 * <p>Micronaut publishes {@link ServerShutdownEvent} as its stop begins, before the graceful stop
 * sends its {@code GOAWAY}s and {@code Connection: close}s; this closes every listening socket
 * then, and waits until each is closed. The JDK lets go of a closed listening socket only when the
 * selector of the event loop that accepted on it next polls, which a running loop does at once.
 * That loop must therefore still run when the stop begins. A parent loop Micronaut made for the
 * server itself does not: the stop shuts it down first, and a Netty loop shutting down polls only
 * every 100 ms through its quiet period (2 s by default), so the port went on completing
 * connections for 100 ms after the signal, all of them reset when it closed. Without a quiet
 * period the loop would end before the graceful stop, whose own close of the socket would then
 * fail on the ended loop. The server's {@code application.yml} therefore gives it a parent loop
 * from Micronaut's registry of event loops ({@code micronaut.netty.event-loops.parent}), which the
 * stop leaves running until the application context closes.
 */
@Singleton
class ListeningSockets implements BeanCreatedEventListener<NettyServerCustomizer.Registry>,
    ApplicationEventListener<ServerShutdownEvent> {

  private static final Logger log = LoggerFactory.getLogger(ListeningSockets.class);

  /** How long the stop waits for the listening sockets to close before it drains connections. */
  private static final Duration PATIENCE = Duration.ofSeconds(1);

  /** Every listening socket the server bound, closed ones included (a handful at most). */
  private final Set<Channel> listening = ConcurrentHashMap.newKeySet();

  @Override
  public NettyServerCustomizer.Registry onCreated(
      BeanCreatedEvent<NettyServerCustomizer.Registry> event) {
    event.getBean().register(new Recorder());
    return event.getBean();
  }

  @Override
  public void onApplicationEvent(ServerShutdownEvent event) {
    close(PATIENCE);
  }

  /**
   * Closes every listening socket and waits, at most {@code patience} in all, until each is
   * closed. Connections already accepted stay open.
   *
   * @return how many listening sockets were open and are now closed
   */
  int close(Duration patience) {
    long deadline = System.nanoTime() + patience.toNanos();
    List<Channel> open = listening.stream().filter(Channel::isOpen).toList();
    for (Channel channel : listening) {
      if (loopShuttingDown(channel)) {
        log.warn("the event loop of listening socket {} is shutting down: the port may take"
            + " connections, and reset them, for up to 100 ms more (is"
            + " micronaut.netty.event-loops.parent configured?)", channel);
      }
    }
    open.forEach(Channel::close);
    int closed = 0;
    for (Channel channel : open) {
      long left = Math.max(0, deadline - System.nanoTime());
      if (channel.closeFuture().awaitUninterruptibly(left / 1_000_000)) {
        closed++;
      } else {
        log.warn("listening socket {} not closed within {} ms", channel, patience.toMillis());
      }
    }
    return closed;
  }

  private static boolean loopShuttingDown(Channel channel) {
    try {
      return channel.eventLoop().isShuttingDown();
    } catch (IllegalStateException neverRegistered) {
      return false;
    }
  }

  /** Takes note of each listening socket as the server binds it. */
  private final class Recorder implements NettyServerCustomizer {
    @Override
    public NettyServerCustomizer specializeForChannel(Channel channel, ChannelRole role) {
      if (role == ChannelRole.LISTENER && channel instanceof ServerChannel) {
        listening.add(channel);
      }
      return this;
    }
  }
}
