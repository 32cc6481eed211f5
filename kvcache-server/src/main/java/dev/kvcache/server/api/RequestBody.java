package dev.kvcache.server.api;

import dev.kvcache.server.errors.ApiException;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.server.netty.NettyHttpRequest;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import reactor.core.publisher.Mono;

/**
 * A PUT's body as Micronaut streams it, made safe to give up on. Micronaut does not always end a
 * body whose connection closed before the controller subscribed to it, so the PUT would hold the
 * room it reserved until {@code kvcache.body-timeout}; and a body cancelled by its subscriber may
 * still signal an error, which Reactor then logs as a dropped error. {@link #of} quiets what comes
 * after a cancel, and {@link #connectionClosed} fails a PUT as soon as its connection is gone.
 */
final class RequestBody {

  private RequestBody() {}

  /** {@code body}, with nothing passed on after its subscriber cancelled (late buffers released). */
  static Publisher<ByteBuf> of(Publisher<ByteBuf> body) {
    return subscriber -> body.subscribe(new Quiet(subscriber));
  }

  /**
   * A Mono that fails with {@code body-aborted} when the request's connection closes (at once if
   * it is closed) and otherwise never signals; cancelling it stops watching.
   */
  static <T> Mono<T> connectionClosed(HttpRequest<?> request) {
    if (!(request instanceof NettyHttpRequest<?> netty)) {
      return Mono.never();
    }
    ChannelFuture closed = netty.getChannelHandlerContext().channel().closeFuture();
    return Mono.create(sink -> {
      ChannelFutureListener listener = f -> sink.error(new ApiException(HttpStatus.BAD_REQUEST,
          "body-aborted", "the connection closed before the body arrived whole"));
      closed.addListener(listener);
      sink.onDispose(() -> closed.removeListener(listener));
    });
  }

  private static final class Quiet implements Subscriber<ByteBuf>, Subscription {
    private final Subscriber<? super ByteBuf> downstream;
    private Subscription upstream;
    private volatile boolean cancelled;

    Quiet(Subscriber<? super ByteBuf> downstream) {
      this.downstream = downstream;
    }

    @Override
    public void onSubscribe(Subscription s) {
      upstream = s;
      downstream.onSubscribe(this);
    }

    @Override
    public void onNext(ByteBuf chunk) {
      if (cancelled) {
        chunk.release();
      } else {
        downstream.onNext(chunk);
      }
    }

    @Override
    public void onError(Throwable e) {
      if (!cancelled) {
        downstream.onError(e);
      }
    }

    @Override
    public void onComplete() {
      if (!cancelled) {
        downstream.onComplete();
      }
    }

    @Override
    public void request(long n) {
      upstream.request(n);
    }

    @Override
    public void cancel() {
      cancelled = true;
      upstream.cancel();
    }
  }
}
