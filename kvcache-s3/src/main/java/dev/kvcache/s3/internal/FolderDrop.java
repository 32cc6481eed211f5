package dev.kvcache.s3.internal;

import dev.kvcache.s3.internal.ObjectNames.Folder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.services.s3.S3AsyncClient;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * Drops a namespace's folder whole: lists it and queues every object in it for deletion, its
 * descriptor last, so that a bucket never holds blocks whose folder does not say what they are.
 */
public final class FolderDrop {

  private static final Logger log = LoggerFactory.getLogger(FolderDrop.class);
  private static final int PROGRESS_EVERY = 100_000;

  private FolderDrop() {}

  /**
   * Lists the folder and queues its objects' deletion.
   *
   * @return the number of blocks queued for deletion
   * @throws IllegalStateException if the store failed to list the folder; what was queued before
   *     the failure is deleted, and the rest stays
   */
  public static long drop(S3AsyncClient s3, String bucket, ObjectNames names, Folder folder,
      DeleteQueue deletes, Requests requests, StoreFailure storeFailure) {
    String where = names.prefix() + folder.id() + "/";
    String descriptor = names.descriptor(folder);
    long blocks = 0;
    boolean described = false;
    String token = null;
    do {
      ListObjectsV2Response page;
      try {
        page = requests.listPage(s3, bucket, where, token, storeFailure);
      } catch (CompletionException e) {
        throw new IllegalStateException("the object store failed while listing " + where
            + " after " + blocks + " blocks: " + e.getCause().getMessage(), e.getCause());
      }
      List<String> gone = new ArrayList<>(page.contents().size());
      for (S3Object o : page.contents()) {
        if (o.key().equals(descriptor)) {
          described = true;
        } else if (names.parse(o.key()).isPresent()) {
          gone.add(o.key());
          if (++blocks % PROGRESS_EVERY == 0) {
            log.info("dropping {}: {} blocks queued for deletion so far", where, blocks);
          }
        }
      }
      deletes.deleteAll(gone);
      token = Boolean.TRUE.equals(page.isTruncated()) ? page.nextContinuationToken() : null;
    } while (token != null);
    if (described) {
      deletes.delete(descriptor);
    }
    log.info("dropped {}: {} blocks queued for deletion", where, blocks);
    return blocks;
  }
}
