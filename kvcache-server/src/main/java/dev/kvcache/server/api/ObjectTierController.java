package dev.kvcache.server.api;

import dev.kvcache.Namespace;
import dev.kvcache.server.access.Access;
import dev.kvcache.server.access.Access.Right;
import dev.kvcache.server.access.Namespaces;
import dev.kvcache.server.errors.ApiException;
import dev.kvcache.spi.NamespaceDrop;
import dev.kvcache.spi.Tier;
import dev.kvcache.wire.Wire;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.MediaType;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Delete;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.serde.annotation.Serdeable;
import java.util.Optional;

/**
 * The namespace's blocks in the object tier, which the fleet shares: dropping them whole frees the
 * bucket of a namespace no longer used (a retired model, say).
 */
@Controller(Wire.NAMESPACES + "{namespace}/objects")
class ObjectTierController {

  private final Namespaces namespaces;
  private final Optional<NamespaceDrop> objects;

  ObjectTierController(Tier cache, Namespaces namespaces) {
    this.namespaces = namespaces;
    this.objects = cache.capability(NamespaceDrop.class);
  }

  /**
   * What a drop did.
   *
   * @param namespace the namespace dropped
   * @param blocks the blocks queued for deletion from the bucket
   */
  @Serdeable
  record Dropped(String namespace, long blocks) {}

  /**
   * 200 once every object of the namespace in the bucket is queued for deletion, whichever server
   * wrote it; 404 if this server has no object tier; 503 if the store failed to list them.
   */
  @Access(Right.WRITE)
  @Delete(consumes = MediaType.ALL)
  @ExecuteOn(TaskExecutors.BLOCKING)
  Dropped drop(String namespace) {
    Namespace ns = namespaces.require(namespace);
    NamespaceDrop s3 = objects.orElseThrow(() -> new ApiException(HttpStatus.NOT_FOUND,
        "no-object-tier", "this server has no object tier (kvcache.cache.s3.bucket)"));
    try {
      return new Dropped(namespace, s3.dropNamespace(ns));
    } catch (IllegalStateException e) {
      throw new ApiException(HttpStatus.SERVICE_UNAVAILABLE, "object-store-failed",
          e.getMessage());
    }
  }
}
