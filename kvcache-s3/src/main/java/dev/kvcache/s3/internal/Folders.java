package dev.kvcache.s3.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.kvcache.Namespace;
import dev.kvcache.s3.internal.ObjectNames.Folder;
import dev.kvcache.s3.internal.Requests.Op;
import java.io.IOException;
import java.util.HexFormat;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;
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

  private static final Logger log = LoggerFactory.getLogger(Folders.class);
  private static final ObjectMapper JSON = new ObjectMapper();

  private final S3AsyncClient s3;
  private final String bucket;
  private final ObjectNames names;
  private final Requests requests;
  private final Predicate<Throwable> storeFailure;
  /** Folders whose descriptor is known to be in the bucket, by id. */
  private final Map<String, Folder> described = new ConcurrentHashMap<>();
  /** Folders whose descriptor a thread is writing. */
  private final Set<String> describing = ConcurrentHashMap.newKeySet();

  /**
   * @param storeFailure records a failed request with the store's state; true if it was the
   *     store's failure
   */
  public Folders(S3AsyncClient s3, String bucket, ObjectNames names, Requests requests,
      Predicate<Throwable> storeFailure) {
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
    } catch (CompletionException e) {
      requests.sent(Op.PUT, System.nanoTime() - start);
      storeFailure.test(e.getCause());
      log.debug("the descriptor of {} was not written: {}", folder.id(), e.getCause().toString());
    }
  }

  /** Forgets that a folder's descriptor was written: the next block stored there writes it. */
  public void forget(Folder folder) {
    described.remove(folder.id());
  }

  /**
   * The folder of a listed id, its namespace read from its descriptor (once per folder); a folder
   * without a readable descriptor has no namespace.
   */
  public Folder folder(String id) {
    if (id.equals(ObjectNames.UNNAMED)) {
      return Folder.NONE;
    }
    Folder known = described.get(id);
    if (known != null) {
      return known;
    }
    Folder read = new Folder(id, readDescriptor(id));
    if (read.namespace() != null) {
      described.put(id, read);
    }
    return read;
  }

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
        return null;
      }
      return ns;
    } catch (CompletionException e) {
      requests.sent(Op.GET, System.nanoTime() - start);
      storeFailure.test(e.getCause());
      return null;
    } catch (IOException | IllegalArgumentException e) {
      log.warn("the descriptor of folder {} cannot be read: {}", id, e.getMessage());
      return null;
    }
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
