package dev.kvcache.s3api.xml;

import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;
import java.io.ByteArrayInputStream;
import java.util.ArrayList;
import java.util.List;
import javax.xml.XMLConstants;
import javax.xml.stream.XMLInputFactory;
import javax.xml.stream.XMLStreamException;
import javax.xml.stream.XMLStreamReader;

/**
 * The XML bodies S3 requests carry: the parts a CompleteMultipartUpload names, the keys a
 * DeleteObjects names. Read without DTDs or external entities; what is not the expected XML is
 * {@code MalformedXML}.
 */
public final class RequestXml {

  /** The most keys one DeleteObjects may name, as S3 allows. */
  public static final int MAX_DELETE_KEYS = 1000;
  /** The most parts a multipart upload may have, as S3 allows. */
  public static final int MAX_PARTS = 10_000;

  private RequestXml() {}

  /** A part a completion names. */
  public record Part(int number, String etag) {}

  /** The keys a DeleteObjects names, and whether it asks for quiet answers. */
  public record Delete(List<String> keys, boolean quiet) {}

  /** The parts of a {@code <CompleteMultipartUpload>} body, in the order given. */
  public static List<Part> completion(byte[] body) throws S3Exception {
    List<Part> parts = new ArrayList<>();
    try {
      XMLStreamReader r = reader(body);
      expectRoot(r, "CompleteMultipartUpload");
      Integer number = null;
      String etag = null;
      while (r.hasNext()) {
        int e = r.next();
        if (e == XMLStreamReader.START_ELEMENT) {
          switch (r.getLocalName()) {
            case "Part" -> {
              number = null;
              etag = null;
            }
            case "PartNumber" -> number = parseInt(r.getElementText().strip());
            case "ETag" -> etag = r.getElementText().strip();
            default -> { } // checksums of parts: not needed to complete
          }
        } else if (e == XMLStreamReader.END_ELEMENT && r.getLocalName().equals("Part")) {
          if (number == null || etag == null) {
            throw malformed("each Part needs a PartNumber and an ETag");
          }
          if (parts.size() == MAX_PARTS) {
            throw malformed("a completion names at most " + MAX_PARTS + " parts");
          }
          parts.add(new Part(number, etag));
        }
      }
    } catch (XMLStreamException e) {
      throw malformed("the body is not well-formed XML: " + e.getMessage());
    }
    if (parts.isEmpty()) {
      throw malformed("a completion names at least one part");
    }
    return parts;
  }

  /** The keys of a {@code <Delete>} body. */
  public static Delete delete(byte[] body) throws S3Exception {
    List<String> keys = new ArrayList<>();
    boolean quiet = false;
    try {
      XMLStreamReader r = reader(body);
      expectRoot(r, "Delete");
      while (r.hasNext()) {
        if (r.next() == XMLStreamReader.START_ELEMENT) {
          switch (r.getLocalName()) {
            case "Quiet" -> quiet = Boolean.parseBoolean(r.getElementText().strip());
            case "Key" -> {
              if (keys.size() == MAX_DELETE_KEYS) {
                throw malformed("DeleteObjects names at most " + MAX_DELETE_KEYS + " keys");
              }
              keys.add(r.getElementText());
            }
            default -> { }
          }
        }
      }
    } catch (XMLStreamException e) {
      throw malformed("the body is not well-formed XML: " + e.getMessage());
    }
    if (keys.isEmpty()) {
      throw malformed("DeleteObjects names at least one key");
    }
    return new Delete(keys, quiet);
  }

  private static XMLStreamReader reader(byte[] body) throws XMLStreamException {
    XMLInputFactory f = XMLInputFactory.newFactory();
    f.setProperty(XMLInputFactory.SUPPORT_DTD, false);
    f.setProperty(XMLInputFactory.IS_SUPPORTING_EXTERNAL_ENTITIES, false);
    f.setProperty(XMLConstants.ACCESS_EXTERNAL_DTD, "");
    return f.createXMLStreamReader(new ByteArrayInputStream(body));
  }

  private static void expectRoot(XMLStreamReader r, String root)
      throws XMLStreamException, S3Exception {
    while (r.hasNext() && r.next() != XMLStreamReader.START_ELEMENT) {
      // the prolog
    }
    if (!r.isStartElement() || !r.getLocalName().equals(root)) {
      throw malformed("the body must be a <" + root + "> element");
    }
  }

  private static int parseInt(String s) throws S3Exception {
    try {
      return Integer.parseInt(s);
    } catch (NumberFormatException e) {
      throw malformed("PartNumber must be a number, not " + s);
    }
  }

  private static S3Exception malformed(String message) {
    return new S3Exception(S3Error.MALFORMED_XML, message);
  }
}
