package dev.kvcache.client;

import dev.kvcache.BlockKey;
import dev.kvcache.PutStatus;
import dev.kvcache.codec.BlockEncoder;
import dev.kvcache.spi.AbstractBlockWriter;
import dev.kvcache.spi.TierCounters;
import dev.kvcache.wire.Wire;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A writer that streams a block to its server while its parts are written ({@link
 * RemoteTier#writer}): the PUT opens with the writer (with the block's length as its {@code
 * content-length}, or encoded chunk by chunk with the wire codec), each part is sent as it comes,
 * copied once into the request's buffers, and the commit ends the body and waits for the answer.
 * A writer closed without a commit resets its request, so the server stores nothing.
 */
final class RemoteWriter extends AbstractBlockWriter {

  private final Protocol protocol;
  private final Requests requests;
  private final TierCounters counters;
  private final ServerLink link;
  private final ResponseSink.Text answer = new ResponseSink.Text();
  private final BodyStream body;
  private BlockEncoder encoder;
  /** The server answered before the body was all sent, or stopped taking it. */
  private boolean stopped;

  RemoteWriter(BlockKey key, int length, RemoteTierConfig config, Protocol protocol,
      ServerLink link, Requests requests, TierCounters counters) {
    super(key, length, false); // the server computes the checksum of what it stores
    this.protocol = protocol;
    this.requests = requests;
    this.counters = counters;
    this.link = link;
    body = config.wireCodec == null
        ? link.startPut(protocol.blockPath(key), length, null, answer)
        : link.startPut(protocol.blockPath(key), -1, Wire.CODING, answer);
    if (body != null && config.wireCodec != null) {
      try {
        encoder = config.wireCodec.encoder(length, body);
      } catch (IOException e) {
        stop();
      }
    }
  }

  @Override
  protected void copyIn(ByteBuffer src, int offset) {
    if (body == null || stopped) {
      return;
    }
    try {
      if (encoder != null) {
        encoder.write(src.duplicate());
      } else {
        body.write(src.duplicate());
      }
    } catch (IOException e) {
      stop();
    }
  }

  @Override
  protected PutStatus publish() {
    if (body == null) {
      return protocol.putStatus("PUT", key(), RemoteCall.UNREACHABLE, answer, counters);
    }
    if (!stopped) {
      try {
        if (encoder != null) {
          encoder.finish();
        }
        body.end();
      } catch (IOException e) {
        stop();
      }
    }
    int status = new RemoteCall(requests, link, "PUT", protocol.blockPath(key()), body.exchange)
        .await();
    return protocol.putStatus("PUT", key(), status, answer, counters);
  }

  @Override
  protected void discard() {
    if (body != null) {
      stop();
      body.exchange.abandon();
    }
  }

  private void stop() {
    stopped = true;
    if (encoder != null) {
      encoder.close();
    }
    body.cancel();
  }
}
