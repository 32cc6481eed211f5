package dev.kvcache.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.kvcache.server.http.RequestFrameStage;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.http2.DefaultHttp2Headers;
import io.netty.handler.codec.http2.Http2FrameAdapter;
import io.netty.handler.codec.http2.Http2Headers;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A stage of the server's frame listeners sees every request's headers, in either form. */
class RequestFrameStageTest {

  @Test
  void headersWithoutPriorityReachTheStageWithTheDefaultPriority() throws Exception {
    List<String> seenByStage = new ArrayList<>();
    List<Integer> seenByNext = new ArrayList<>();
    RequestFrameStage stage = new RequestFrameStage(new Http2FrameAdapter() {
      @Override
      public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers,
          int padding, boolean endOfStream) {
        seenByNext.add(streamId);
      }
    }) {
      @Override
      public void onHeadersRead(ChannelHandlerContext ctx, int streamId, Http2Headers headers,
          int streamDependency, short weight, boolean exclusive, int padding,
          boolean endOfStream) {
        seenByStage.add(streamId + " " + headers.path() + " " + streamDependency + " " + weight
            + " " + exclusive + " " + padding + " " + endOfStream);
      }
    };

    stage.onHeadersRead(null, 3, new DefaultHttp2Headers().path("/v1/health"), 2, true);

    assertThat(seenByStage).containsExactly("3 /v1/health 0 16 false 2 true");
    assertThat(seenByNext).isEmpty();
  }
}
