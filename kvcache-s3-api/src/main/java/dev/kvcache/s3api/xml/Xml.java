package dev.kvcache.s3api.xml;

/** Building XML text with its characters escaped. */
final class Xml {

  static final String DECLARATION = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  static final String NAMESPACE = "http://s3.amazonaws.com/doc/2006-03-01/";

  private final StringBuilder b = new StringBuilder(256).append(DECLARATION);

  /** Opens {@code name}, with S3's namespace if {@code root}. */
  Xml open(String name, boolean root) {
    b.append('<').append(name);
    if (root) {
      b.append(" xmlns=\"").append(NAMESPACE).append('"');
    }
    b.append('>');
    return this;
  }

  Xml close(String name) {
    b.append("</").append(name).append('>');
    return this;
  }

  /** {@code <name>text</name>}, the text escaped; nothing if {@code text} is null. */
  Xml element(String name, Object text) {
    if (text != null) {
      b.append('<').append(name).append('>');
      escape(text.toString());
      b.append("</").append(name).append('>');
    }
    return this;
  }

  @Override
  public String toString() {
    return b.toString();
  }

  private void escape(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '<' -> b.append("&lt;");
        case '>' -> b.append("&gt;");
        case '&' -> b.append("&amp;");
        case '"' -> b.append("&quot;");
        case '\'' -> b.append("&apos;");
        default -> b.append(c); // no key holds a character XML cannot carry (Route)
      }
    }
  }
}
