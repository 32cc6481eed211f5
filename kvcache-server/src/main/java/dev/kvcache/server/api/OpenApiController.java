package dev.kvcache.server.api;

import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Get;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;

/** Serves the OpenAPI description of the server ({@code docs/openapi.yaml}) at /openapi.yaml. */
@Controller
class OpenApiController {

  private final byte[] description;

  OpenApiController() {
    try (InputStream in = OpenApiController.class.getResourceAsStream("/kvcache/openapi.yaml")) {
      if (in == null) {
        throw new IllegalStateException("kvcache/openapi.yaml is missing from the server's jar");
      }
      description = in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Get(uri = "/openapi.yaml", produces = "application/yaml")
  byte[] openApi() {
    return description;
  }
}
