package dev.kvcache.s3.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvcache.Namespace;
import dev.kvcache.s3.internal.ObjectNames.Folder;
import dev.kvcache.s3.internal.Requests.Op;
import java.io.IOException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import software.amazon.awssdk.core.async.AsyncRequestBody;
import software.amazon.awssdk.core.async.AsyncResponseTransformer;
import software.amazon.awssdk.services.s3.S3AsyncClient;

/**
 * The namespace folders of the bucket and their descriptors: a small JSON object per folder that
 * says which namespace it holds, so that a bucket explains itself and a server that lists it learns
 * the namespace of every block it finds.
 *
 * <pre>{"format": "kvcache-s3/1", "model": "...", "dtype": "...", "layout": "...",
 *  "tenant": "...", "digest": "<64 hex digits>"}</pre>
 */
public final class Folders {

  /** The descriptor's {@code format}. */
  public static final String FORMAT = "kvcache-s3/1";
  /** How long a folder found without a readable descriptor is taken to have none. */
  public static final Duration UNDESCRIBED_FOR = Duration.ofMinutes(10);

  private static final Logger log = LoggerFactory.getLogger(Folders.class);
  private static final ObjectMapper JSON = new ObjectMapper();

  private final S3AsyncClient s3;
  private final String bucket;
  private final ObjectNames names;
  private final Requests requests;
  private final StoreFailure storeFailure;
  /** Folders whose descriptor is known to be in the bucket, by id. */
  private final Map<String, Folder> described = new ConcurrentHashMap<>();
  /** Folders whose descriptor a thread is writing. */
  private final Set<String> describing = ConcurrentHashMap.newKeySet();
  /**
   * Folders found without a readable descriptor (a namespace dropped while objects of it were
   * left, a descriptor that is missing or damaged), by id, with when to read it again
   * (System.nanoTime): a listing asks once per folder, not once per object.
   */
  private final Map<String, Long> undescribed = new ConcurrentHashMap<>();

  /**
   * @param storeFailure records a failed request with the store's state; true if it was the
   *     store's failure
   */
  public Folders(S3AsyncClient s3, String bucket, ObjectNames names, Requests requests,
      StoreFailure storeFailure) {
    this.s3 = s3;
    this.bucket = bucket;
    this.names = names;
    this.requests = requests;
    this.storeFailure = storeFailure;
  }

  /**
   * Writes a folder's descriptor if this tier has not written or seen it, and no other thread is
   * writing it; best effort.
   */
  public void describe(Folder folder) {
    if (folder.namespace() == null || described.containsKey(folder.id())
        || !describing.add(folder.id())) {
      return;
    }
    try {
      write(folder);
    } finally {
      describing.remove(folder.id());
    }
  }

  private void write(Folder folder) {
    byte[] body = descriptor(folder.namespace());
    long start = System.nanoTime();
    try {
      s3.putObject(b -> b.bucket(bucket).key(names.descriptor(folder))
              .contentType("application/json").contentLength((long) body.length),
          AsyncRequestBody.fromBytes(body)).join();
      requests.sent(Op.PUT, System.nanoTime() - start);
      described.put(folder.id(), folder);
      undescribed.remove(folder.id());
    } catch (CompletionException e) {
      requests.sent(Op.PUT, System.nanoTime() - start);
      storeFailure.record(e.getCause(), start);
      log.debug("the descriptor of {} was not written: {}", folder.id(), e.getCause().toString());
    }
  }

  /** Forgets that a folder's descriptor was written: the next block stored there writes it. */
  public void forget(Folder folder) {
    described.remove(folder.id());
  }

  /**
   * The folder of a listed id, its namespace read from its descriptor (once per folder); a folder
   * without a readable descriptor has no namespace, and its descriptor is not asked for again for
   * {@link #UNDESCRIBED_FOR} (unless the store failed to answer).
   */
  public Folder folder(String id) {
    if (id.equals(ObjectNames.UNNAMED)) {
      return Folder.NONE;
    }
    Folder known = described.get(id);
    if (known != null) {
      return known;
    }
    Long again = undescribed.get(id);
    if (again != null && System.nanoTime() - again < 0) {
      return new Folder(id, null);
    }
    Folder read = new Folder(id, readDescriptor(id));
    if (read.namespace() != null) {
      described.put(id, read);
      undescribed.remove(id);
    }
    return read;
  }

  /** The namespace the folder's descriptor names; null if it has none or the store failed. */
  private Namespace readDescriptor(String id) {
    long start = System.nanoTime();
    try {
      byte[] body = s3.getObject(b -> b.bucket(bucket).key(names.descriptor(new Folder(id, null))),
          AsyncResponseTransformer.toBytes()).join().asByteArray();
      requests.sent(Op.GET, System.nanoTime() - start);
      Namespace ns = parse(body);
      if (!ObjectNames.folder(ns).id().equals(id)) {
        log.warn("the descriptor of folder {} describes {}, whose folder is another: ignored", id,
            ns);
        return undescribed(id);
      }
      return ns;
    } catch (CompletionException e) {
      requests.sent(Op.GET, System.nanoTime() - start);
      if (storeFailure.record(e.getCause(), start)) {
        return null; // asked again at the next object of the folder
      }
      log.info("folder {} has no descriptor (a namespace dropped or being written): its objects"
          + " are listed without a namespace", id);
      return undescribed(id);
    } catch (IOException | IllegalArgumentException e) {
      log.warn("the descriptor of folder {} cannot be read: {}", id, e.getMessage());
      return undescribed(id);
    }
  }

  private Namespace undescribed(String id) {
    undescribed.put(id, System.nanoTime() + UNDESCRIBED_FOR.toNanos());
    return null;
  }

  /** A namespace's descriptor. */
  static byte[] descriptor(Namespace ns) {
    ObjectNode o = JSON.createObjectNode();
    o.put("format", FORMAT);
    o.put("model", ns.model());
    o.put("dtype", ns.dtype());
    o.put("layout", ns.layout());
    o.put("tenant", ns.tenant());
    o.put("digest", HexFormat.of().formatHex(ns.digest()));
    try {
      return JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(o);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * The namespace a descriptor describes.
   *
   * @throws IOException if it is not JSON
   * @throws IllegalArgumentException if it is not a descriptor of this format, or its digest is
   *     not its fields'
   */
  static Namespace parse(byte[] body) throws IOException {
    JsonNode o = JSON.readTree(body);
    if (o == null || !FORMAT.equals(o.path("format").asText())) {
      throw new IllegalArgumentException("not a descriptor of format " + FORMAT);
    }
    Namespace ns = Namespace.of(o.path("model").asText(), o.path("dtype").asText(),
        o.path("layout").asText(), o.path("tenant").asText());
    if (!HexFormat.of().formatHex(ns.digest()).equals(o.path("digest").asText())) {
      throw new IllegalArgumentException("its digest is not the digest of its fields");
    }
    return ns;
  }
}
