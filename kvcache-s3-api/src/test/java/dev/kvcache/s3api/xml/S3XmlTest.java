package dev.kvcache.s3api.xml;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.kvcache.s3api.S3Error;
import dev.kvcache.s3api.S3Exception;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;

/**
 * Answers are well-formed XML that gives back every name as it was, whatever characters it has;
 * request bodies are read as S3 clients send them, and what is not that XML, or reaches for an
 * external entity, is refused as {@code MalformedXML}.
 */
class S3XmlTest {

  private static final String ODD = "a<b>&c\"d'e/é\t@.bin";

  @Test
  void anErrorAndAListingGiveBackEveryNameAsItWas() throws Exception {
    Document e = parse(S3Xml.error(S3Error.NO_SUCH_KEY, "no " + ODD, "/b/" + ODD, "req-1"));
    assertThat(text(e, "Code")).isEqualTo("NoSuchKey");
    assertThat(text(e, "Resource")).isEqualTo("/b/" + ODD);

    Document l = parse(S3Xml.listObjectsV2("b", ODD, "/", 2, null, null, "next",
        List.of(new S3Xml.ListedObject(ODD, Instant.parse("2026-11-30T12:00:00.123456Z"),
            "\"abc\"", 5)), List.of(ODD + "/"), null));
    assertThat(l.getDocumentElement().getNamespaceURI()).isEqualTo(Xml.NAMESPACE);
    assertThat(text(l, "Key")).isEqualTo(ODD);
    assertThat(text(l, "LastModified")).isEqualTo("2026-11-30T12:00:00.123Z");
    assertThat(text(l, "KeyCount")).isEqualTo("2");
    assertThat(text(l, "IsTruncated")).isEqualTo("true");
    assertThat(text(l, "NextContinuationToken")).isEqualTo("next");
    assertThat(l.getElementsByTagName("CommonPrefixes").getLength()).isEqualTo(1);
  }

  @Test
  void aCompletionAndADeletionAreReadAsClientsSendThem() throws Exception {
    List<RequestXml.Part> parts = RequestXml.completion(bytes("""
        <?xml version="1.0" encoding="UTF-8"?>
        <CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
          <Part><ETag>"e1"</ETag><ChecksumCRC32>AAAAAA==</ChecksumCRC32><PartNumber>1</PartNumber></Part>
          <Part><PartNumber>2</PartNumber><ETag>"e2"</ETag></Part>
        </CompleteMultipartUpload>"""));
    assertThat(parts).containsExactly(new RequestXml.Part(1, "\"e1\""),
        new RequestXml.Part(2, "\"e2\""));
    RequestXml.Delete d = RequestXml.delete(bytes(
        "<Delete><Object><Key>" + ODD.replace("&", "&amp;").replace("<", "&lt;")
            + "</Key></Object><Object><Key>k2</Key></Object>"
            + "<Quiet>true</Quiet></Delete>"));
    assertThat(d.keys()).containsExactly(ODD, "k2");
    assertThat(d.quiet()).isTrue();
  }

  @Test
  void otherXmlAndExternalEntitiesAreMalformed() {
    for (String body : new String[] {"<Delete/>", "<Other><Key>k</Key></Other>", "not xml",
        "<CompleteMultipartUpload><Part><PartNumber>x</PartNumber></Part></CompleteMultipartUpload>",
        "<?xml version=\"1.0\"?><!DOCTYPE d [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>"
            + "<Delete><Object><Key>&x;</Key></Object></Delete>"}) {
      assertThatThrownBy(() -> {
        if (body.contains("Complete")) {
          RequestXml.completion(bytes(body));
        } else {
          RequestXml.delete(bytes(body));
        }
      }).as(body).isInstanceOfSatisfying(S3Exception.class,
          e -> assertThat(e.error()).isEqualTo(S3Error.MALFORMED_XML));
    }
  }

  private static Document parse(String xml) throws Exception {
    DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
    f.setNamespaceAware(true);
    return f.newDocumentBuilder().parse(new ByteArrayInputStream(
        xml.getBytes(StandardCharsets.UTF_8)));
  }

  private static String text(Document d, String tag) {
    return d.getElementsByTagName(tag).item(0).getTextContent();
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
