package dev.kvcache.server.api;

import dev.kvcache.Namespace;
import dev.kvcache.server.access.Access;
import dev.kvcache.server.access.Access.Right;
import dev.kvcache.server.access.Namespaces;
import dev.kvcache.server.errors.ApiException;
import dev.kvcache.spi.NamespaceRemoval;
import dev.kvcache.spi.Tier;
import dev.kvcache.wire.Wire;
import io.micronaut.http.HttpStatus;
import io.micronaut.http.MediaType;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Delete;
import io.micronaut.scheduling.TaskExecutors;
import io.micronaut.scheduling.annotation.ExecuteOn;
import io.micronaut.serde.annotation.Serdeable;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.Optional;

/**
 * A namespace emptied from every tier at once (a tenant that leaves): its salts destroyed first,
 * so that its sealed blocks on disk and in the bucket open nowhere from then on, then its blocks
 * removed from RAM, the disk and the bucket the fleet shares.
 */
@Controller(Wire.NAMESPACES + "{namespace}")
class NamespaceController {

  private final Namespaces namespaces;
  private final Optional<NamespaceRemoval> removal;

  NamespaceController(Tier cache, Namespaces namespaces) {
    this.namespaces = namespaces;
    this.removal = cache.capability(NamespaceRemoval.class);
  }

  /**
   * What a removal did.
   *
   * @param namespace the namespace emptied
   * @param blocks the blocks removed from each tier, by its name (for the bucket, queued for
   *     deletion, whichever server wrote them)
   */
  @Serdeable
  record Removed(String namespace, Map<String, Long> blocks) {}

  /**
   * 200 once the namespace's salts are destroyed, its blocks removed from RAM and the disk and
   * queued for deletion from the bucket; 503 if a salt could not be deleted or the object store
   * failed to list the namespace's objects (ask again).
   */
  @Access(Right.WRITE)
  @Delete(consumes = MediaType.ALL)
  @ExecuteOn(TaskExecutors.BLOCKING)
  Removed remove(String namespace) {
    Namespace ns = namespaces.require(namespace);
    NamespaceRemoval tiers = removal.orElseThrow(() -> new ApiException(HttpStatus.NOT_FOUND,
        "no-removal", "no tier of this server can remove a namespace"));
    try {
      return new Removed(namespace, tiers.removeNamespace(ns));
    } catch (UncheckedIOException e) {
      throw new ApiException(HttpStatus.SERVICE_UNAVAILABLE, "storage-failed",
          e.getMessage());
    } catch (IllegalStateException e) {
      throw new ApiException(HttpStatus.SERVICE_UNAVAILABLE, "object-store-failed",
          e.getMessage());
    }
  }
}
