package dev.kvcache.server.s3;

import io.micronaut.context.annotation.Requires;
import io.micronaut.core.order.Ordered;
import io.micronaut.http.HttpRequest;
import io.micronaut.http.MutableHttpResponse;
import io.micronaut.http.ServerHttpRequest;
import io.micronaut.http.annotation.Filter;
import io.micronaut.http.filter.HttpServerFilter;
import io.micronaut.http.filter.ServerFilterChain;
import org.reactivestreams.Publisher;

/**
 * The S3 API's port: every request that arrives on it is answered here, as S3 answers it, before
 * the server's routes (and their {@code /v1} token filter) see it; requests on the server's own
 * port go on as before.
 */
@Filter(Filter.MATCH_ALL_PATTERN)
@Requires(property = "kvcache.s3.enabled", notEquals = "false")
final class S3Endpoint implements HttpServerFilter {

  private final S3Settings settings;
  private final S3Requests requests;

  S3Endpoint(S3Settings settings, S3Requests requests) {
    this.settings = settings;
    this.requests = requests;
  }

  @Override
  public int getOrder() {
    return Ordered.HIGHEST_PRECEDENCE;
  }

  @Override
  public Publisher<MutableHttpResponse<?>> doFilter(HttpRequest<?> request,
      ServerFilterChain chain) {
    if (request.getServerAddress().getPort() != settings.port()
        || !(request instanceof ServerHttpRequest<?> server)) {
      return chain.proceed(request);
    }
    return requests.handle(server);
  }
}
